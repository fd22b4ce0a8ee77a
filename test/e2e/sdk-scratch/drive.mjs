// A receiver's and an integrator's script, run from a scratch project where the SDK tarball was
// installed: it imports only the package. Told where Deskhand is and which session to use by the
// environment; prints one JSON line of what it saw.
import http from 'node:http';
import { Deskhand, ConflictError, DeskhandError } from '@deskhand/sdk';
import { verifyWebhook, checkWebhook, SIGNATURE_HEADER } from '@deskhand/sdk/webhooks';

const { DESKHAND_BASE_URL: baseUrl, DESKHAND_API_KEY: apiKey, SESSION_CODE: code } = process.env;
const deskhand = new Deskhand({ apiKey, baseUrl });

// A webhook receiver: keeps each raw body and its signature header.
const deliveries = [];
let sawCompleted;
const completed = new Promise((resolve) => (sawCompleted = resolve));
const receiver = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const rawBody = Buffer.concat(chunks);
    deliveries.push({ rawBody, header: req.headers[SIGNATURE_HEADER.toLowerCase()] });
    res.writeHead(200).end();
    if (JSON.parse(rawBody.toString()).type === 'task.completed') sawCompleted();
  });
});
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const { secret } = await deskhand.webhook.update({ url: `http://127.0.0.1:${receiver.address().port}/hooks`, events: [], rotate_secret: true });

const task = await deskhand.sessions.startTask(code, {
  prompt: 'ask "Which size?" "S" "M" "L"\ndone "Noted size {answer}"',
  metadata: { from: 'sdk' },
});
const follow = deskhand.tasks.follow(task.task_id, { waitMs: 5000 });
const events = [];
let lateAnswer;
for await (const event of follow) {
  events.push({ cursor: event.cursor, type: event.type });
  if (event.type === 'question') {
    await deskhand.tasks.respond(task.task_id, { question_id: event.data.question_id, answer: 'M' });
    // A second answer loses, as a typed error.
    lateAnswer = await deskhand.tasks.respond(task.task_id, { question_id: event.data.question_id, answer: 'L' }).catch((error) => error);
  }
}
await completed;
receiver.close();

const fresh = await deskhand.tasks.get(task.task_id);
const frame = await deskhand.tasks.recordingFrame(task.task_id, 1);
const missing = await deskhand.tasks.get('task_doesnotexist00000000').catch((error) => error);
const completedDelivery = deliveries.find((d) => JSON.parse(d.rawBody.toString()).type === 'task.completed');
const tampered = Buffer.from(completedDelivery.rawBody.toString().replace('Noted size M', 'Noted size L'));
console.log(
  JSON.stringify({
    taskId: task.task_id,
    events,
    followedTask: { status: follow.task.status, done: follow.task.done, result: follow.task.result },
    fetchedResult: fresh.result,
    frameIsPng: Buffer.from(frame.subarray(0, 8)).toString('hex') === '89504e470d0a1a0a',
    lateAnswer: lateAnswer instanceof ConflictError ? { code: lateAnswer.code, answered_by: lateAnswer.answered_by, status: lateAnswer.status } : String(lateAnswer),
    missing: missing instanceof DeskhandError ? { name: missing.name, type: missing.type, status: missing.status } : String(missing),
    deliveries: deliveries.map((d) => ({ type: JSON.parse(d.rawBody.toString()).type, verified: verifyWebhook(d.rawBody, d.header, secret) })),
    tampered: checkWebhook(tampered, completedDelivery.header, secret),
    wrongSecret: verifyWebhook(completedDelivery.rawBody, completedDelivery.header, 'whsec_not_the_secret'),
  }),
);
