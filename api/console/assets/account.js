'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, say } = window.deskhand;
  const form = document.getElementById('password-form');
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const current = form.querySelector('#current-password');
    const body = { password: form.querySelector('#new-password').value };
    if (current) body.current_password = current.value;
    try {
      await api('PUT', '/v1/me/password', body);
      form.reset();
      say(form, 'Password saved.');
    } catch (error) {
      say(form, error.message, true);
    }
  });
});
