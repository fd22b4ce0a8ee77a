import { io, type Socket } from 'socket.io-client';
import { DesktopEvents, type HelloReply } from '../../shared/desktop/protocol';

/**
 * Opens a desktop connection as the apps do (websocket only, no reconnection) and, given a
 * pairing code, says hello as a Mac of `size` and waits for the welcome; a refusal rejects.
 */
export function openDesktopSocket(baseUrl: string, code: string | null, size = { width: 1440, height: 900 }): Promise<Socket> {
  const socket = io(`${baseUrl}/desktop`, { transports: ['websocket'], reconnection: false, forceNew: true, timeout: 60_000 });
  return new Promise((resolve, reject) => {
    socket.once('connect_error', reject);
    socket.once('connect', () => {
      if (code === null) return resolve(socket);
      socket
        .timeout(60_000)
        .emitWithAck(DesktopEvents.hello, {
          code,
          device: { os: 'mac', name: 'bench', ...size, app_version: '1.0.20' },
          capabilities: { accessibility: true, page_addresses: true, element_info: true },
        })
        .then((reply: HelloReply) => (reply.ok ? resolve(socket) : reject(new Error(`hello refused: ${reply.code} ${reply.message}`))), reject);
    });
  });
}
