// The computers of `npm run bench -- steps`, in a process of their own as real ones would be:
// each connects to /desktop with its session's code and answers every action at once with the
// same small screenshot. The bench sends { baseUrl, codes } and waits for { connected }.
import { createCanvas } from '@napi-rs/canvas';
import type { Socket } from 'socket.io-client';
import { openDesktopSocket } from '../support/desktop-socket';
import { DesktopEvents, type ActMessage, type Observation, type ResultMessage } from '../../shared/desktop/protocol';

const canvas = createCanvas(64, 40);
canvas.getContext('2d').fillRect(0, 0, 10, 10);
const png = canvas.toBuffer('image/png');
const observation: Observation = {
  width: 64,
  height: 40,
  windows: [{ app: 'TextEdit', title: 'Untitled', bounds: { x: 0, y: 0, width: 64, height: 40 }, system: false }],
  focused_app: 'TextEdit',
  focused: null,
  elements: [],
  dialog: null,
  text: '',
  visible_labels: [],
};

async function connect(baseUrl: string, code: string): Promise<Socket> {
  const socket = await openDesktopSocket(baseUrl, code, { width: observation.width, height: observation.height });
  socket.on(DesktopEvents.act, (message: ActMessage) => {
    const result: ResultMessage = { task_id: message.task_id, act_id: message.act_id, result: { ok: true, observation, screenshot: png } };
    socket.emit(DesktopEvents.result, result);
  });
  return socket;
}

process.on('message', (message: { baseUrl: string; codes: string[] }) => {
  Promise.all(message.codes.map((code) => connect(message.baseUrl, code))).then(
    (sockets) => process.send?.({ connected: sockets.length }),
    (error: unknown) => {
      process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
      process.exit(1);
    },
  );
});
process.send?.({ started: true });
