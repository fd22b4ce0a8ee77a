/**
 * Examples of the resources, shown in /openapi.json and on /docs. Each is checked against its
 * schema by test/integration/openapi-examples.test.ts, so a field added to a schema without an
 * example value fails there instead of showing an example that the API would never answer.
 */

const AT = '2026-03-02T09:14:05.000Z';
const TASK_ID = 'task_3k9xq7m2pd8w4tz1vn5c';

export const SESSION_EXAMPLE = {
  object: 'session',
  session_id: 'K7QX-M2PD',
  code: 'K7QX-M2PD',
  agent_id: 'support',
  invite_url: 'https://deskhand.example.com/invite/K7QX-M2PD',
  status: 'connected',
  device: { os: 'mac', name: 'Ada’s MacBook Air', width: 1470, height: 956, app_version: '2.4.1' },
  metadata: { customer_id: 'cus_1042' },
  created_at: '2026-03-02T09:02:11.000Z',
  paired_at: '2026-03-02T09:05:40.000Z',
  last_active_at: AT,
  expires_at: null,
  task_count: 1,
  latest_task_id: TASK_ID,
};

export const TASK_EXAMPLE = {
  object: 'task',
  task_id: TASK_ID,
  session_id: 'K7QX-M2PD',
  agent_id: 'support',
  agent_version: 3,
  agent_draft: false,
  request_id: 'ticket-1042-printer',
  status: 'running',
  done: false,
  prompt: 'Set up the office printer (HP LaserJet, 10.0.4.21) and print a test page.',
  result: null,
  error: null,
  pending: {
    type: 'question',
    question_id: 'q_8d2kf0s7w3k9m4x6c8vb',
    question: 'Which printer should be the default?',
    options: ['HP LaserJet (office)', 'Keep the current default'],
    customer_can_answer: true,
  },
  cursor: 14,
  metadata: { ticket: '1042' },
  created_at: '2026-03-02T09:06:02.000Z',
  updated_at: AT,
  active_seconds: 83,
  billed_minutes: null,
  replay_url: `https://deskhand.example.com/console/tasks/${TASK_ID}`,
  recording: { frames: 9 },
};

export const TASK_EVENT_EXAMPLE = {
  cursor: 14,
  type: 'question',
  message: 'Which printer should be the default?',
  ts: AT,
  data: { question_id: 'q_8d2kf0s7w3k9m4x6c8vb', options: ['HP LaserJet (office)', 'Keep the current default'] },
};

export const ERROR_EXAMPLE = {
  error: { type: 'not_found', message: `No task ${TASK_ID}` },
};
