import net from 'node:net';

/**
 * Free TCP ports on `address`, for child processes that must listen on a known one. All are
 * held at once before any is let go, so that no two are the same.
 */
export async function freePorts(count: number, address = '127.0.0.1'): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: count }, () => new Promise<net.Server>((resolve, reject) => {
      const server = net.createServer();
      server.once('error', reject);
      server.listen(0, address, () => resolve(server));
    })),
  );
  const ports = servers.map((server) => (server.address() as net.AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

/** A TCP port free now on `address`. */
export async function freePort(address = '127.0.0.1'): Promise<number> {
  return (await freePorts(1, address))[0]!;
}

/** Whether `host:port` accepts a TCP connection now (within `timeoutMs`). */
export function accepts(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: timeoutMs });
    const done = (ok: boolean) => (socket.destroy(), resolve(ok));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}
