// One agent: its published version, its draft (edit, save only what changed, publish, discard),
// and its version history (view one, restore one into the draft).
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, el, when, say, pageData } = window.deskhand;
  const { badge, updateRows, actionButton, actor } = window.deskhandWorkspace;
  const { agentId } = pageData();
  const base = `/v1/agents/${encodeURIComponent(agentId)}`;
  const published = document.querySelector('[data-testid="published"]');
  const draftState = document.querySelector('[data-testid="draft-state"]');
  const form = document.getElementById('draft-form');
  const versionsBody = document.querySelector('[data-testid="versions"] tbody');
  const versionsStatus = document.getElementById('versions-status');
  const moreVersions = document.getElementById('versions-more');
  const versionView = document.getElementById('version-view');
  const field = (name) => form.elements.namedItem(name);
  // The draft as loaded: what the form compares against to send only the fields changed.
  let draft = null;
  let versions = [];
  let versionsCursor = null;

  function facts(list, pairs) {
    list.replaceChildren(...pairs.flatMap(([term, value]) => [el('dt', null, term), el('dd', null, value)]));
  }

  function config(agent) {
    return [
      ['Name', agent.name],
      ['Display name', agent.display_name || '(the service\'s own name)'],
      ['Model', agent.model || 'service default'],
      ['Effort', agent.effort || 'default (low)'],
      ['Guardrails', `${agent.guardrails.mode}, at most ${agent.guardrails.max_steps} turns`],
      ['Greeting', agent.greeting || '(none)'],
    ];
  }

  async function loadPublished() {
    const agent = await api('GET', base);
    document.getElementById('agent-name').textContent = agent.name;
    facts(published, [
      ['Version', el('span', { 'data-testid': 'published-version' }, String(agent.version))],
      ...config(agent),
      ['Default agent', agent.is_default ? 'yes' : 'no'],
      ['Published', `${when(agent.updated_at)}${agent.updated_by ? ` by ${actor(agent.updated_by)}` : ''}`],
    ]);
  }

  function fillForm(loaded) {
    draft = loaded;
    field('name').value = loaded.name;
    field('display_name').value = loaded.display_name;
    field('greeting').value = loaded.greeting;
    field('instructions').value = loaded.instructions;
    const model = field('model');
    if (loaded.model && !Array.from(model.options).some((option) => option.value === loaded.model)) {
      // A model no longer offered (retired): shown as it is, so that saving does not change it unasked.
      model.append(el('option', { value: loaded.model }, `${loaded.model} (no longer offered)`));
    }
    model.value = loaded.model || '';
    field('effort').value = loaded.effort || '';
    field('mode').value = loaded.guardrails.mode;
    field('max_steps').value = String(loaded.guardrails.max_steps);
    field('narration').checked = loaded.narration;
    field('customer_answers').checked = loaded.customer_answers;
    field('customer_approvals').checked = loaded.customer_approvals;
    if (!loaded.has_draft) {
      draftState.textContent = `No draft: the form shows version ${loaded.version}. Saving starts a draft; nothing runs differently until it is published.`;
      return;
    }
    const parts = [`A draft based on version ${loaded.based_on_version}, saved ${when(loaded.saved_at)}${loaded.saved_by ? ` by ${actor(loaded.saved_by)}` : ''}.`];
    if (loaded.restored_from_version) parts.push(`It holds version ${loaded.restored_from_version}, restored.`);
    if (loaded.based_on_version < loaded.version) parts.push(`Version ${loaded.version} was published since: publishing this draft undoes it.`);
    draftState.textContent = parts.join(' ');
  }

  async function loadDraft() {
    fillForm(await api('GET', `${base}/draft`));
  }

  /** The fields of the form that differ from the loaded draft, as a draft body. */
  function changes() {
    const body = {};
    const text = (name) => {
      if (field(name).value !== draft[name]) body[name] = field(name).value;
    };
    ['name', 'display_name', 'greeting', 'instructions'].forEach(text);
    const model = field('model').value || null;
    if (model !== draft.model) body.model = model;
    const effort = field('effort').value || null;
    if (effort !== draft.effort) body.effort = effort;
    ['narration', 'customer_answers', 'customer_approvals'].forEach((name) => {
      if (field(name).checked !== draft[name]) body[name] = field(name).checked;
    });
    const guardrails = {};
    if (field('mode').value !== draft.guardrails.mode) guardrails.mode = field('mode').value;
    const maxSteps = Number(field('max_steps').value);
    if (maxSteps !== draft.guardrails.max_steps) guardrails.max_steps = maxSteps;
    if (Object.keys(guardrails).length > 0) body.guardrails = guardrails;
    return body;
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const body = changes();
    if (Object.keys(body).length === 0) {
      say(form, 'Nothing changed.');
      return;
    }
    say(form, 'Saving…');
    try {
      fillForm(await api('PATCH', `${base}/draft`, body));
      say(form, 'Draft saved. Publish it to make it the version tasks run.');
    } catch (error) {
      say(form, error.message, true);
    }
  });

  async function reloadAll() {
    await Promise.all([loadPublished(), loadDraft(), loadVersions(true)]);
  }

  document.getElementById('draft-actions').append(
    actionButton('Publish draft', { class: 'primary' }, () => api('POST', `${base}/draft/publish`), async (agent, message) => {
      await reloadAll();
      const undone = agent.undone_versions.length ? ` It undid version${agent.undone_versions.length > 1 ? 's' : ''} ${agent.undone_versions.join(', ')}.` : '';
      message.textContent = `Published version ${agent.version}.${undone}`;
    }),
    actionButton('Discard draft', { class: 'danger' }, () => api('DELETE', `${base}/draft`), async (loaded, message) => {
      fillForm(loaded);
      say(form, '');
      message.textContent = 'Draft discarded.';
    }),
  );

  function versionRow(version) {
    const restore = actionButton('Restore', { 'aria-label': `Restore version ${version.version} into the draft` }, () => api('POST', `${base}/versions/${version.version}/restore`), async (loaded, message) => {
      fillForm(loaded);
      message.textContent = `Version ${version.version} is in the draft; publish it to run it.`;
    });
    const how = { created: 'created', patched: 'published directly', draft: 'published draft' }[version.origin] || version.origin;
    const notes = [];
    if (version.restored_from_version) notes.push(`restored from ${version.restored_from_version}`);
    if (version.undone_versions.length) notes.push(`undid ${version.undone_versions.join(', ')}`);
    return el('tr', null,
      el('td', null, String(version.version), version.is_published ? [' ', badge('published')] : null),
      el('td', null, how, notes.length ? el('span', { class: 'note' }, ` (${notes.join('; ')})`) : null),
      el('td', null, when(version.created_at)),
      el('td', null, actor(version.created_by)),
      el('td', null, el('div', { class: 'row' },
        el('button', { type: 'button', 'aria-label': `View version ${version.version}`, onclick: () => viewVersion(version.version) }, 'View'),
        restore)));
  }

  async function loadVersions(fromStart) {
    try {
      const query = new URLSearchParams({ limit: '20' });
      if (!fromStart && versionsCursor) query.set('cursor', versionsCursor);
      const page = await api('GET', `${base}/versions?${query}`);
      versions = fromStart ? page.data : versions.concat(page.data);
      versionsCursor = page.next_cursor;
      moreVersions.hidden = !page.has_more;
      updateRows(versionsBody, versions, { id: (version) => String(version.version), render: versionRow, empty: 'No versions.', columns: 5 });
    } catch (error) {
      versionsStatus.textContent = error.message;
      versionsStatus.classList.add('error');
    }
  }

  async function viewVersion(number) {
    try {
      const version = await api('GET', `${base}/versions/${number}`);
      document.getElementById('version-view-heading').textContent = `Version ${version.version}${version.is_published ? ' (published)' : ''}`;
      facts(versionView.querySelector('[data-testid="version-facts"]'), [
        ...config(version),
        ['Published', `${when(version.created_at)}${version.created_by ? ` by ${actor(version.created_by)}` : ''}`],
      ]);
      versionView.querySelector('[data-testid="version-instructions"]').textContent = version.instructions || '(none)';
      versionView.hidden = false;
      versionView.focus();
    } catch (error) {
      versionsStatus.textContent = error.message;
      versionsStatus.classList.add('error');
    }
  }

  moreVersions.addEventListener('click', () => loadVersions(false));
  reloadAll().catch((error) => say(form, error.message, true));
});
