import { io, type Socket } from 'socket.io-client';
import { RunnerEvents } from '../../api/sockets/runners.gateway';

/** What a runner reports in its hello, as the tests' runners report it. */
export const RUNNER_REPORT = { provider: 'simulated', version: '0.1.0', labels: ['eu', 'gpu'], slots: 2, images: ['macos-15', 'windows-11'] };

/** A bare runner connection on `/runners`: says hello and heartbeats when told. The reference runner comes with machines. */
export class RawRunner {
  readonly socket: Socket;

  constructor(baseUrl: string) {
    this.socket = io(`${baseUrl}/runners`, { transports: ['websocket'], reconnection: false, forceNew: true });
  }

  /** Connects and says hello (the token and `RUNNER_REPORT`, with `overrides`); resolves with the service's reply. */
  async hello(token: string, overrides: Record<string, unknown> = {}): Promise<any> {
    if (!this.socket.connected) {
      await new Promise<void>((resolve, reject) => {
        this.socket.once('connect', () => resolve());
        this.socket.once('connect_error', reject);
      });
    }
    return this.socket.timeout(5000).emitWithAck(RunnerEvents.hello, { token, ...RUNNER_REPORT, ...overrides });
  }

  heartbeat(payload: Record<string, unknown> = {}): Promise<any> {
    return this.socket.timeout(5000).emitWithAck(RunnerEvents.heartbeat, payload);
  }

  close(): void {
    this.socket.disconnect();
  }
}
