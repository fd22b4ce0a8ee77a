// Settings, Members: the org's people and their roles; invite (the invitation's link shown once),
// open invitations (revoke), change a role, remove (asks first). The API decides who may: its refusals are shown by the action.
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, el, when, say, pageData } = window.deskhand;
  const { show, rowStatus, button, askFirst, copyButton, wideRow } = window.settings;
  const me = pageData().userId;
  const ROLES = ['member', 'admin', 'owner'];
  const body = document.getElementById('members-body');
  const status = document.getElementById('members-status');
  const form = document.getElementById('invite-form');
  const box = document.getElementById('invite-link');
  const link = box.querySelector('.secret');
  copyButton(document.getElementById('copy-link'), link, box.querySelector('.form-status'));
  document.getElementById('hide-link').addEventListener('click', () => {
    link.textContent = '';
    box.hidden = true;
    form.querySelector('input').focus();
  });

  function memberRow(member) {
    const status = rowStatus();
    const select = el('select', { 'aria-label': 'Role of ' + member.email }, ...ROLES.map((role) => el('option', { value: role, selected: role === member.role }, role)));
    const change = button('Change role', 'of ' + member.email, {});
    const row = el(
      'tr',
      { 'data-user-id': member.user_id },
      el('td', {}, member.email, member.user_id === me ? ' (you)' : ''),
      el('td', {}, el('span', { class: 'row' }, select, change)),
      el('td', {}, member.has_password ? 'set' : 'not yet'),
      el('td', {}, when(member.created_at)),
      el(
        'td',
        {},
        askFirst({
          label: 'Remove',
          about: member.email,
          question: 'Remove ' + member.email + ' from the org? Their sign-ins end at once.',
          yes: 'Yes, remove',
          status,
          run: async () => {
            await api('DELETE', '/v1/members/' + encodeURIComponent(member.user_id));
            row.remove();
            show(document.getElementById('members-status'), 'Removed ' + member.email + '.');
          },
        }),
        status,
      ),
    );
    change.addEventListener('click', async () => {
      change.disabled = true;
      try {
        const changed = await api('PATCH', '/v1/members/' + encodeURIComponent(member.user_id), { role: select.value });
        const next = memberRow(changed);
        row.replaceWith(next);
        show(next.querySelector('.row-status'), member.email + ' is now ' + changed.role + '.');
        next.querySelector('select').focus();
      } catch (error) {
        change.disabled = false;
        show(status, error.message, true);
      }
    });
    return row;
  }

  const invitations = document.getElementById('invitations-body');
  const inviter = (actor) => (actor === null ? 'the operator' : actor.type === 'user' ? actor.email : 'API key ' + (actor.name || actor.prefix || ''));

  function invitationRow(invitation) {
    const status = rowStatus();
    const row = el(
      'tr',
      { 'data-invitation-id': invitation.invitation_id },
      el('td', {}, invitation.email),
      el('td', {}, invitation.role),
      el('td', {}, inviter(invitation.invited_by)),
      el('td', {}, when(invitation.expires_at)),
      el(
        'td',
        {},
        askFirst({
          label: 'Revoke',
          about: 'the invitation of ' + invitation.email,
          question: 'Revoke the invitation of ' + invitation.email + '? Its link stops working at once.',
          yes: 'Yes, revoke',
          status,
          run: async () => {
            await api('DELETE', '/v1/invitations/' + encodeURIComponent(invitation.invitation_id));
            row.remove();
            show(document.getElementById('members-status'), 'Revoked the invitation of ' + invitation.email + '.');
          },
        }),
        status,
      ),
    );
    return row;
  }

  async function load() {
    try {
      const [list, open] = await Promise.all([api('GET', '/v1/members'), api('GET', '/v1/invitations')]);
      body.replaceChildren(...(list.data.length ? list.data.map(memberRow) : [wideRow(5, 'Nobody yet.')]));
      invitations.replaceChildren(...(open.data.length ? open.data.map(invitationRow) : [wideRow(5, 'None open.')]));
      show(status, '');
    } catch (error) {
      show(status, 'Cannot list the members: ' + error.message, true);
    }
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const email = form.querySelector('#invite-email').value;
    const role = form.querySelector('#invite-role').value;
    try {
      const invited = await api('POST', '/v1/members', { email, role });
      form.reset();
      box.querySelector('[data-testid="invited-email"]').textContent = invited.email;
      link.textContent = invited.invite_url;
      box.hidden = false;
      say(form, 'Invited ' + invited.email + ' as ' + invited.role + '. Send them the link below: it is shown only once.');
      await load();
    } catch (error) {
      say(form, 'Not invited: ' + error.message, true);
    }
  });

  load();
});
