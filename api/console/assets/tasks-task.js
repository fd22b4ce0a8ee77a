// A task's page (/console/tasks/{task_id}, the task's replay_url): follows the task through
// GET /v1/tasks/{id}/events (a long poll while it runs), shows its event timeline beside its
// recording frame by frame (GET /v1/tasks/{id}/recording/{seq}), marks on each frame where its
// action clicked or typed, and answers its open question or approval (POST .../respond) or
// stops it (POST .../stop).
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, el, pageData, when, show: tell } = window.deskhand;
  const WAIT_MS = 25000;
  const RETRY_MS = 5000;
  let task = pageData().task;
  const base = '/v1/tasks/' + encodeURIComponent(task.task_id);
  const $ = (id) => document.getElementById(id);

  // --- The task's facts, outcome, open question or approval, and Stop ---------------------

  /** When it started and ended: the trace has them (GET /v1/tasks/{id}?include=trace); read again when the status changes. */
  let timesRead = null;
  async function readTimes() {
    const state = task.status;
    if (timesRead === state) return;
    timesRead = state;
    try {
      const { trace } = await api('GET', base + '?include=trace');
      $('task-started').textContent = trace.started_at ? when(trace.started_at) : 'not yet';
      $('task-ended').textContent = trace.ended_at ? when(trace.ended_at) : task.done ? '' : 'still running';
    } catch (error) {
      timesRead = null;
      $('task-started').textContent = error.message;
    }
  }

  function showTask(next) {
    task = next;
    readTimes();
    const badge = $('task-status');
    badge.className = 'badge ' + task.status;
    badge.textContent = task.status;
    $('task-updated').textContent = when(task.updated_at);
    $('task-active').textContent = task.active_seconds + ' s';
    $('task-billed').textContent = task.billed_minutes === null ? 'not yet billed' : String(task.billed_minutes);
    const outcome = [];
    if (task.result !== null) outcome.push(el('h3', {}, 'Result'), el('p', { class: 'task-result', 'data-testid': 'result' }, task.result));
    if (task.error !== null) outcome.push(el('h3', {}, 'Error'), el('p', { class: 'error', 'data-testid': 'error' }, task.error));
    $('task-outcome').replaceChildren(...outcome);
    document.querySelector('.task-stop').hidden = task.done;
    showPending(task.pending);
    recordingGrew(task.recording.frames);
  }

  const pendingBox = $('task-pending');
  const pendingStatus = el('p', { class: 'form-status', id: 'pending-status', role: 'status', 'aria-live': 'polite' });
  pendingBox.after(pendingStatus);
  let pendingId = null;

  async function respond(form, body) {
    for (const control of form.querySelectorAll('button, input, textarea')) control.disabled = true;
    try {
      const answered = await api('POST', base + '/respond', body);
      tell(pendingStatus, body.question_id ? 'Answer sent.' : body.decision === 'approve' ? 'Approved.' : 'Denied.');
      showTask(answered);
    } catch (error) {
      // 409 already_answered: the person at the computer (or a timeout) was first; the API says who.
      tell(pendingStatus, error.message, true);
      for (const control of form.querySelectorAll('button, input, textarea')) control.disabled = false;
      // The form decides again whether it can be sent (a question's Send waits for an answer).
      form.dispatchEvent(new Event('change'));
    }
  }

  function questionForm(pending) {
    const form = el('form', { class: 'stack pending-form', 'aria-labelledby': 'pending-heading' }, el('h3', { id: 'pending-heading' }, 'The agent asks'), el('p', { class: 'pending-question' }, pending.question));
    // Nothing is chosen until the person chooses: a preselected option would be sent by a quick
    // Send as if it were the team's answer. Send stays disabled, with a hint, until then.
    let read;
    const choosing = pending.options.length > 0;
    if (choosing) {
      const choices = pending.options.map((option) =>
        el('label', { class: 'pending-option' }, el('input', { type: 'radio', name: 'answer', value: option, required: true }), ' ', option),
      );
      form.append(el('fieldset', { class: 'stack' }, el('legend', {}, 'Answer'), choices));
      read = () => {
        const checked = form.querySelector('input[name="answer"]:checked');
        return checked ? checked.value : '';
      };
    } else {
      const input = el('input', { id: 'pending-answer', name: 'answer', required: true, autocomplete: 'off' });
      form.append(el('label', { for: 'pending-answer' }, 'Answer'), input);
      read = () => input.value.trim();
    }
    if (pending.customer_can_answer) form.append(el('p', { class: 'note' }, 'The person at the computer can answer too; the first answer counts.'));
    const hint = el('p', { id: 'pending-hint', class: 'note', 'data-testid': 'pending-hint' }, choosing ? 'Choose an answer to send it.' : 'Type an answer to send it.');
    const send = el('button', { type: 'submit', class: 'primary', disabled: true, 'aria-describedby': 'pending-hint' }, 'Send answer');
    form.append(hint, el('div', { class: 'row' }, send));
    const update = () => {
      const ready = read() !== '';
      send.disabled = !ready;
      hint.hidden = ready;
    };
    form.addEventListener('input', update);
    form.addEventListener('change', update);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      if (read() === '') return update();
      respond(form, { question_id: pending.question_id, answer: read() });
    });
    return form;
  }

  function approvalForm(pending) {
    const form = el('form', { class: 'stack pending-form', 'aria-labelledby': 'pending-heading' }, el('h3', { id: 'pending-heading' }, 'Approval needed'), el('p', { class: 'pending-question' }, pending.what));
    if (pending.risk === 'high') form.append(el('p', { class: 'error' }, 'High risk: denying it stops the task.'));
    if (pending.expires_at) form.append(el('p', { class: 'note' }, 'Denied by timeout at ' + when(pending.expires_at) + '.'));
    if (pending.customer_can_approve) form.append(el('p', { class: 'note' }, 'The person at the computer can decide too; the first decision counts.'));
    const note = el('input', { id: 'pending-note', name: 'note', autocomplete: 'off' });
    form.append(el('label', { for: 'pending-note' }, 'Note (optional)'), note);
    const decide = (decision) => () => respond(form, { approval_id: pending.approval_id, decision, ...(note.value ? { note: note.value } : {}) });
    form.append(el('div', { class: 'row' }, el('button', { type: 'button', class: 'primary', onclick: decide('approve') }, 'Approve'), el('button', { type: 'button', class: 'danger', onclick: decide('deny') }, 'Deny')));
    form.addEventListener('submit', (event) => event.preventDefault());
    return form;
  }

  function showPending(pending) {
    const id = pending ? pending.question_id || pending.approval_id : null;
    if (id === pendingId) return;
    pendingId = id;
    pendingBox.replaceChildren(...(pending ? [pending.type === 'question' ? questionForm(pending) : approvalForm(pending)] : []));
  }

  const stopStatus = $('task-stop-status');
  $('task-stop').addEventListener('click', async (event) => {
    event.target.disabled = true;
    try {
      showTask(await api('POST', base + '/stop'));
      tell(stopStatus, 'The task was stopped.');
    } catch (error) {
      tell(stopStatus, error.message, true);
    } finally {
      event.target.disabled = false;
    }
  });

  // --- The recording, frame by frame, with each frame's action marked -----------------------

  const viewer = $('frame-viewer');
  const stage = $('frame-stage');
  const image = $('frame-image');
  const slider = $('frame-slider');
  const caption = $('frame-caption');
  /** Frame seq → the action that made it and its result (the screen just after that action). */
  const frameActions = new Map();
  let frames = 0;
  let current = 0;

  /** Where an action acted, in screen coordinates: the places to mark and what to call them. */
  function marks(action, eventData) {
    switch (action.type) {
      case 'click':
        return [{ x: action.x, y: action.y, label: action.double ? 'Double-click' : action.button === 'right' ? 'Right-click' : 'Click' }];
      case 'scroll':
        return [{ x: action.x, y: action.y, label: 'Scroll' }];
      case 'drag':
        return [{ ...action.from, label: 'Drag from' }, { ...action.to, label: 'Drag to' }];
      case 'type':
        return eventData.at ? [{ x: eventData.at.x, y: eventData.at.y, label: 'Typed here' }] : [];
      default:
        return [];
    }
  }

  function drawMarks() {
    for (const old of stage.querySelectorAll('.frame-marker')) old.remove();
    const made = frameActions.get(current);
    if (!made || !made.action) return;
    const screen = (made.result && made.result.data.screen) || (image.naturalWidth ? { width: image.naturalWidth, height: image.naturalHeight } : null);
    if (!screen) return;
    for (const mark of marks(made.action.data.action, made.action.data)) {
      const marker = el('span', { class: 'frame-marker', 'aria-hidden': 'true', title: mark.label, 'data-x': mark.x, 'data-y': mark.y, 'data-label': mark.label });
      marker.style.left = (mark.x / screen.width) * 100 + '%';
      marker.style.top = (mark.y / screen.height) * 100 + '%';
      stage.append(marker);
    }
  }

  function describeFrame(seq) {
    const made = frameActions.get(seq);
    const what = !made || !made.action ? '' : made.action.data.action.type === 'screenshot' ? ': a look at the screen' : ': after ' + made.action.message;
    return 'Frame ' + seq + ' of ' + frames + what;
  }

  function show(seq) {
    if (frames === 0) return;
    const next = Math.min(frames, Math.max(1, seq));
    if (next !== current) {
      current = next;
      image.src = base + '/recording/' + current;
    }
    slider.value = String(current);
    caption.textContent = describeFrame(current);
    image.alt = 'Recorded screen, ' + caption.textContent;
    drawMarks();
    for (const item of timeline.querySelectorAll('li')) {
      if (Number(item.dataset.frame) === current) item.setAttribute('aria-current', 'true');
      else item.removeAttribute('aria-current');
    }
  }

  function recordingGrew(count) {
    if (count <= frames) return;
    // Someone watching the newest frame keeps watching the newest; a replay starts at the first.
    const following = current > 0 && current === frames;
    frames = count;
    viewer.hidden = false;
    $('frame-none').hidden = true;
    slider.max = String(frames);
    if (following) show(frames);
    else if (current === 0) show(task.done ? 1 : frames);
    else show(current);
  }

  image.addEventListener('load', drawMarks);
  slider.addEventListener('input', () => show(Number(slider.value)));
  $('frame-previous').addEventListener('click', () => show(current - 1));
  $('frame-next').addEventListener('click', () => show(current + 1));
  stage.addEventListener('keydown', (event) => {
    const moves = { ArrowLeft: current - 1, ArrowRight: current + 1, Home: 1, End: frames };
    if (!(event.key in moves)) return;
    event.preventDefault();
    show(moves[event.key]);
  });

  // --- The event timeline, each event linked to the frame it belongs to ---------------------

  const timeline = $('task-events');
  const eventsStatus = $('events-status');
  /** act_id → the action event and its timeline entry, until its result names the frame it made. */
  const actions = new Map();
  let lastFrame = 0;
  let count = 0;

  function entry(event, frame) {
    const item = el('li', { 'data-cursor': event.cursor, 'data-type': event.type, 'data-frame': frame || null });
    const label = [el('time', { datetime: event.ts, class: 'note' }, when(event.ts)), ' ', el('span', { class: 'event-type' }, event.type), ' ', el('span', { class: 'event-message' }, event.message)];
    if (frame) item.append(el('button', { type: 'button', class: 'event-frame', onclick: () => show(frame) }, label, el('span', { class: 'tasks-sr-only' }, ' (show frame ' + frame + ')')));
    else item.append(el('div', { class: 'event-frame' }, label));
    if (frame && frame === current) item.setAttribute('aria-current', 'true');
    return item;
  }

  function addEvents(events) {
    for (const event of events) {
      count++;
      if (event.type === 'action') {
        const item = entry(event, 0);
        actions.set(event.data.act_id, { event, item });
        timeline.append(item);
        continue;
      }
      if (event.type === 'action_result' && event.data.frame) {
        lastFrame = event.data.frame;
        const acted = actions.get(event.data.act_id);
        frameActions.set(lastFrame, { action: acted ? acted.event : null, result: event });
        if (acted) {
          acted.item.replaceWith(entry(acted.event, lastFrame));
          actions.delete(event.data.act_id);
        }
      }
      timeline.append(entry(event, lastFrame));
    }
    if (current > 0) show(current);
  }

  async function follow() {
    let cursor = 0;
    let wait = 0;
    for (;;) {
      try {
        const page = await api('GET', base + '/events?after=' + cursor + '&wait_ms=' + wait);
        addEvents(page.data);
        cursor = page.cursor;
        showTask(page.task);
        const caughtUp = cursor >= page.task.cursor;
        eventsStatus.classList.remove('error');
        eventsStatus.textContent = count + (count === 1 ? ' event' : ' events') + (page.task.done ? '.' : '; following the task as it runs.');
        if (page.task.done && caughtUp) return;
        wait = caughtUp ? WAIT_MS : 0;
      } catch (error) {
        eventsStatus.textContent = error.message + ' Trying again shortly.';
        eventsStatus.classList.add('error');
        if (error.status === 404) return;
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
  }

  $('task-created').textContent = when(task.created_at);
  showTask(task);
  follow();
});
