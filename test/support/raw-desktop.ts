import { io, type Socket } from 'socket.io-client';
import { DesktopEvents, type Capabilities, type DeviceInfo, type HelloReply } from '../../shared/desktop/protocol';

export const MAC_DEVICE: DeviceInfo = { os: 'mac', name: 'Test Mac', width: 1440, height: 900, app_version: '1.0.20' };
export const FULL_CAPABILITIES: Capabilities = { accessibility: true, page_addresses: true, element_info: true };

/**
 * A bare desktop-app connection for protocol tests: says hello and records what arrives. The
 * reference desktop client (shared/simulator) is the full app; this is only the wire.
 */
export class RawDesktop {
  readonly socket: Socket;
  readonly received: Array<{ event: string; payload: unknown }> = [];

  constructor(baseUrl: string) {
    this.socket = io(`${baseUrl}/desktop`, { transports: ['websocket'], reconnection: false, forceNew: true });
    this.socket.onAny((event: string, payload: unknown) => this.received.push({ event, payload }));
  }

  /** Connects and says hello; resolves with the service's reply. */
  async hello(code: string, device: DeviceInfo = MAC_DEVICE, capabilities: Capabilities = FULL_CAPABILITIES): Promise<HelloReply> {
    if (!this.socket.connected) {
      await new Promise<void>((resolve, reject) => {
        this.socket.once('connect', () => resolve());
        this.socket.once('connect_error', reject);
      });
    }
    return this.socket.timeout(5000).emitWithAck(DesktopEvents.hello, { code, device, capabilities });
  }

  close(): void {
    this.socket.disconnect();
  }
}
