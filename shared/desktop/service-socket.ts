import { io, type Socket } from 'socket.io-client';

/**
 * A socket.io connection to one of the service's namespaces (`/desktop`, `/runners`), as the
 * reference desktop client and the reference runner both open it: WebSocket only (no sticky
 * sessions needed when the service runs several web processes), reconnecting with delays that
 * grow from `reconnectDelayMs` to ten times it, not connected until `connect()`.
 */
export function serviceSocket(baseUrl: string, namespace: string, options: { path?: string; reconnectDelayMs?: number }): Socket {
  const delay = options.reconnectDelayMs ?? 1000;
  // The namespace is the URL's path; the service's own path prefix goes into `path`.
  return io(`${new URL(baseUrl).origin}${namespace}`, {
    path: options.path ?? '/socket.io',
    transports: ['websocket'],
    autoConnect: false,
    forceNew: true,
    reconnection: true,
    reconnectionDelay: delay,
    reconnectionDelayMax: delay * 10,
  });
}
