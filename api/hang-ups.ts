import type http from 'node:http';
import type { Socket } from 'node:net';

/** The access log's status of a request whose client hung up before its answer (nginx's). */
export const HUNG_UP = 499;

/** Whether the client has hung up: its connection closed before the answer was written. */
export function hungUp(res: http.ServerResponse): boolean {
  return res.socket === null || res.socket.destroyed;
}

/** The hang-up of each connection that has carried a long poll; see `hangUpSignal`. */
const connections = new WeakMap<Socket, AbortController>();

/**
 * A signal that aborts when the client hangs up before `res` is answered, already aborted when it
 * has gone before the handler is called: what a long poll's handler is given
 * (`LongPollInput.signal`), whichever way its request came.
 *
 * A client of HTTP/1.1 hangs up by closing its connection (a response closes unanswered only
 * then), so the signal is its connection's: made with the connection's first long poll, shared by
 * the polls that follow on it one at a time, each of which lets go of it when answered. An
 * AbortSignal takes 0.74 KB of heap; one per response added that much to every waiting poll
 * (follow-heap: 5.53 KB against 4.78 KB) and to the garbage of every answer, which the scavenger
 * pays for in wake-up latency. Per connection it is made once and soon old (4.61 KB per waiting
 * poll; 1.2 KB more per keep-alive connection). docs/benchmarks.md, follow.
 */
export function hangUpSignal(res: http.ServerResponse): AbortSignal {
  const socket = res.socket;
  if (socket === null || socket.destroyed) return AbortSignal.abort();
  let hangUp = connections.get(socket);
  if (!hangUp) {
    const made = new AbortController();
    socket.on('close', () => made.abort());
    connections.set(socket, (hangUp = made));
  }
  return hangUp.signal;
}
