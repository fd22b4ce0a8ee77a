import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for the load balancer in front of several web processes: each new TCP connection
 * goes to the next backend port, round robin, skipping one that refuses it (a process stopping
 * or not started yet). A connection lives and dies with the backend it went to.
 */
export class TcpBalancer {
  backends: number[];
  private next = 0;
  private readonly server: net.Server;
  private readonly open = new Set<net.Socket>();

  constructor(backends: number[] = []) {
    this.backends = backends;
    this.server = net.createServer((client) => this.route(client));
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private route(client: net.Socket, tried = 0): void {
    if (tried === 0) {
      this.open.add(client);
      client.once('close', () => this.open.delete(client));
      client.pause();
    }
    if (tried >= this.backends.length) {
      client.destroy();
      return;
    }
    const port = this.backends[this.next++ % this.backends.length]!;
    const upstream = net.connect(port, '127.0.0.1');
    let connected = false;
    upstream.on('error', () => {
      if (connected) client.destroy();
      else this.route(client, tried + 1);
    });
    upstream.once('connect', () => {
      connected = true;
      this.open.add(upstream);
      upstream.once('close', () => {
        this.open.delete(upstream);
        client.destroy();
      });
      client.once('close', () => upstream.destroy());
      client.on('error', () => upstream.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
  }

  async close(): Promise<void> {
    for (const socket of this.open) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
