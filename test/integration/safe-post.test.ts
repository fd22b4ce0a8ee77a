import http from 'node:http';
import type { LookupAddress } from 'node:dns';
import type { AddressInfo, Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect } from 'chai';
import { checkUrlForRegistration, type HostResolver } from '../../shared/http/address-policy';
import { createSafeHttpClient, safePost, type SafeHttpClient } from '../../shared/http/safe-post';
import { signPayload, verifySignature } from '../../shared/http/signature';

interface Hit { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }

interface Receiver {
  port: number;
  hits: Hit[];
  /** TCP connections accepted, whether or not a request followed. */
  connections: number;
  /** Server-side sockets still open. */
  openSockets(): number;
  close(): Promise<void>;
}

/**
 * A receiver on 127.0.0.1 that records what reaches it. `respond` decides the answer; by
 * default 200 `{"received":true}` after reading the whole body.
 */
async function startReceiver(respond?: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void): Promise<Receiver> {
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      receiver.hits.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (respond) respond(req, res, body);
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
    });
  });
  server.on('connection', (socket: Socket) => {
    receiver.connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const receiver: Receiver = {
    port: (server.address() as AddressInfo).port,
    hits: [],
    connections: 0,
    openSockets: () => sockets.size,
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
  return receiver;
}

/** Our DNS boundary, answered from a mutable table; records every name asked. */
function tableLookup(table: Record<string, string[]>): HostResolver & { asked: string[]; table: Record<string, string[]> } {
  const asked: string[] = [];
  const lookup = async (hostname: string): Promise<LookupAddress[]> => {
    asked.push(hostname);
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(lookup, { asked, table });
}

/** Polls a condition with growing sleeps; fails after `timeoutMs`. */
async function waitFor(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const started = Date.now();
  for (let delay = 5; !condition(); delay = Math.min(delay * 2, 100)) {
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

const HOST = 'hooks.customer-example.com';
const BODY = JSON.stringify({ id: 'evt_1', type: 'task.started', data: { task: { id: 'task_1' } } });
const CALL = { timeoutMs: 5000, maxResponseBytes: 65536 };

describe('shared/http/safe-post', () => {
  const receivers: Receiver[] = [];
  const clients: SafeHttpClient[] = [];
  async function receiver(respond?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
    const r = await startReceiver(respond);
    receivers.push(r);
    return r;
  }
  function client(options: Parameters<typeof createSafeHttpClient>[0]): SafeHttpClient {
    const c = createSafeHttpClient(options);
    clients.push(c);
    return c;
  }

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  describe('address policy at connection time', () => {
    it('refuses a name whose lookup answers 127.0.0.1, in the lookup, before any connection', async () => {
      const target = await receiver();
      const lookup = tableLookup({ [HOST]: ['127.0.0.1'] });
      const result = await client({ allowPrivate: false, lookup }).post(`https://${HOST}:${target.port}/hook`, BODY, CALL);

      expect(result).to.include({ ok: false, status: null, errorCode: 'refused', bodyText: '', truncated: false });
      expect(result.error).to.match(/private, local or reserved/);
      expect(lookup.asked).to.deep.equal([HOST]);
      expect(target.connections).to.equal(0);
      expect(target.hits).to.have.length(0);
    });

    it('reaches the same receiver through the same lookup with allowPrivate, and reports the connected address', async () => {
      const target = await receiver();
      const lookup = tableLookup({ [HOST]: ['127.0.0.1'] });
      const secret = 'whsec_test';
      const result = await client({ allowPrivate: true, lookup }).post(`http://${HOST}:${target.port}/hook?x=1`, BODY, {
        ...CALL,
        headers: { 'Service-Signature': signPayload(BODY, secret) },
      });

      expect(result).to.include({ ok: true, status: 200, bodyText: '{"received":true}', truncated: false, error: null, errorCode: null });
      expect(result.remoteAddress).to.equal('127.0.0.1');
      expect(lookup.asked).to.deep.equal([HOST]);
      expect(target.hits).to.have.length(1);
      const [hit] = target.hits;
      expect(hit).to.include({ method: 'POST', url: '/hook?x=1', body: BODY });
      expect(hit.headers['content-type']).to.equal('application/json');
      expect(hit.headers.host).to.equal(`${HOST}:${target.port}`);
      expect(verifySignature(hit.body, hit.headers['service-signature'] as string, secret)).to.equal(true);
    });

    it('refuses a name when ANY of its addresses is private, without connecting to the others', async () => {
      const target = await receiver();
      // The private answer comes first: a policy that let it through would connect to it.
      const lookup = tableLookup({ [HOST]: ['127.0.0.1', '93.184.216.34'] });
      const result = await client({ allowPrivate: false, lookup }).post(`https://${HOST}:${target.port}/`, BODY, CALL);
      expect(result).to.include({ ok: false, errorCode: 'refused' });
      expect(target.connections).to.equal(0);
    });

    it('refuses at delivery a name whose answer changed from public to private after registration', async () => {
      const target = await receiver();
      const dns = tableLookup({ [HOST]: ['93.184.216.34'] });
      const url = `https://${HOST}:${target.port}/hook`;

      const registration = await checkUrlForRegistration(url, { allowPrivate: false, resolve: dns });
      expect(registration.ok).to.equal(true);

      dns.table[HOST] = ['127.0.0.1']; // DNS rebinding: the record now points inside
      const result = await client({ allowPrivate: false, lookup: dns }).post(url, BODY, CALL);

      expect(result).to.include({ ok: false, status: null, errorCode: 'refused' });
      expect(dns.asked).to.deep.equal([HOST, HOST]);
      expect(target.connections).to.equal(0);
    });

    it('refuses literal private addresses before connecting (no lookup runs for them)', async () => {
      const target = await receiver();
      const lookup = tableLookup({});
      const c = client({ allowPrivate: false, lookup });
      for (const host of ['127.0.0.1', '2130706433', '0x7f.1', '[::ffff:127.0.0.1]', '[::1]', 'localhost']) {
        const result = await c.post(`https://${host}:${target.port}/`, BODY, CALL);
        expect(result, host).to.include({ ok: false, status: null, errorCode: 'refused' });
      }
      expect(lookup.asked).to.deep.equal([]);
      expect(target.connections).to.equal(0);
    });

    it('refuses plain http without allowPrivate, before resolving', async () => {
      const lookup = tableLookup({ [HOST]: ['93.184.216.34'] });
      const result = await client({ allowPrivate: false, lookup }).post(`http://${HOST}/hook`, BODY, CALL);
      expect(result).to.include({ ok: false, errorCode: 'refused', error: 'the URL must use https' });
      expect(lookup.asked).to.deep.equal([]);
    });
  });

  describe('redirects', () => {
    for (const status of [301, 302, 303, 307, 308]) {
      it(`treats a ${status} as a failed attempt and never follows it`, async () => {
        const redirectTarget = await receiver();
        const origin = await receiver((_req, res) => {
          res.writeHead(status, { location: `http://127.0.0.1:${redirectTarget.port}/stolen` }).end('moved');
        });
        const result = await client({ allowPrivate: true }).post(`http://127.0.0.1:${origin.port}/hook`, BODY, CALL);

        expect(result).to.include({ ok: false, status, errorCode: 'http_status', bodyText: 'moved' });
        expect(result.error).to.equal(`HTTP ${status}: redirects are not followed`);
        expect(origin.hits).to.have.length(1);
        expect(redirectTarget.hits).to.have.length(0);
        expect(redirectTarget.connections).to.equal(0);
      });
    }
  });

  describe('one deadline for the whole attempt', () => {
    const timeoutMs = 300;

    it('ends near the deadline when the receiver never answers', async () => {
      const target = await receiver(() => { /* never answers */ });
      const started = Date.now();
      const result = await client({ allowPrivate: true }).post(`http://127.0.0.1:${target.port}/`, BODY, { ...CALL, timeoutMs });
      const elapsed = Date.now() - started;

      expect(result).to.include({ ok: false, status: null, errorCode: 'timeout' });
      expect(elapsed).to.be.within(timeoutMs - 20, timeoutMs + 250);
      expect(result.durationMs).to.be.within(timeoutMs - 20, timeoutMs + 250);
      await waitFor(() => target.openSockets() === 0); // the connection is not left open
    });

    it('ends near the deadline when the receiver sends headers and then trickles the body', async () => {
      let timer: NodeJS.Timeout | undefined;
      const target = await receiver((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('a');
        timer = setInterval(() => res.write('b'), 40);
        res.on('close', () => clearInterval(timer));
      });
      const started = Date.now();
      const result = await client({ allowPrivate: true }).post(`http://127.0.0.1:${target.port}/`, BODY, { ...CALL, timeoutMs });
      const elapsed = Date.now() - started;
      clearInterval(timer);

      expect(result).to.include({ ok: false, status: 200, errorCode: 'timeout' });
      expect(result.bodyText).to.match(/^ab+$/); // what arrived in time is kept
      expect(elapsed).to.be.within(timeoutMs - 20, timeoutMs + 250);
      await waitFor(() => target.openSockets() === 0);
    });

    it('ends near the deadline when name resolution never answers', async () => {
      const hanging: HostResolver = () => new Promise(() => undefined);
      const started = Date.now();
      const result = await client({ allowPrivate: false, lookup: hanging }).post(`https://${HOST}/`, BODY, { ...CALL, timeoutMs });
      expect(result).to.include({ ok: false, status: null, errorCode: 'timeout' });
      expect(Date.now() - started).to.be.within(timeoutMs - 20, timeoutMs + 250);
    });

    it("stops when the caller's signal fires, reported as aborted", async () => {
      const target = await receiver(() => { /* never answers */ });
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      const result = await client({ allowPrivate: true }).post(`http://127.0.0.1:${target.port}/`, BODY, {
        ...CALL,
        signal: controller.signal,
      });
      expect(result).to.include({ ok: false, errorCode: 'aborted' });
      expect(result.durationMs).to.be.below(1000);
    });
  });

  describe('reply size cap', () => {
    it('cuts a 10 MB reply at 64 KB, with bounded memory, and closes the connection early', async () => {
      const total = 10 * 1024 * 1024;
      const chunk = Buffer.alloc(64 * 1024, 'x'); // one buffer reused, so the server itself stays small
      let written = 0;
      let finished = false;
      const target = await receiver((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(total) });
        const pump = (): void => {
          while (written < total) {
            written += chunk.length;
            if (!res.write(chunk)) {
              res.once('drain', pump);
              return;
            }
          }
          finished = true;
          res.end();
        };
        pump();
      });

      const c = client({ allowPrivate: true });
      collectGarbage();
      const baseline = process.memoryUsage();
      let peakArrayBuffers = baseline.arrayBuffers;
      let peakHeap = baseline.heapUsed;
      const sampler = setInterval(() => {
        const now = process.memoryUsage();
        peakArrayBuffers = Math.max(peakArrayBuffers, now.arrayBuffers);
        peakHeap = Math.max(peakHeap, now.heapUsed);
      }, 1);
      let result;
      try {
        result = await c.post(`http://127.0.0.1:${target.port}/`, BODY, { timeoutMs: 10_000, maxResponseBytes: 64 * 1024 });
      } finally {
        clearInterval(sampler);
      }
      const after = process.memoryUsage();
      peakArrayBuffers = Math.max(peakArrayBuffers, after.arrayBuffers);
      peakHeap = Math.max(peakHeap, after.heapUsed);

      expect(result).to.include({ ok: true, status: 200, truncated: true, error: null });
      expect(result.bodyText).to.have.length(64 * 1024);
      expect(peakArrayBuffers - baseline.arrayBuffers, 'arrayBuffers growth').to.be.below(4 * 1024 * 1024);
      expect(peakHeap - baseline.heapUsed, 'heap growth').to.be.below(4 * 1024 * 1024);

      await waitFor(() => target.openSockets() === 0);
      expect(target.hits, 'requests received').to.have.length(1);
      expect(finished, 'server finished writing 10 MB').to.equal(false);
      expect(written).to.be.below(total);
    });

    it('keeps a reply that fits, and one of exactly the cap, whole', async () => {
      const target = await receiver((req, res) => res.writeHead(200).end('y'.repeat(Number(req.url?.slice(1)))));
      const c = client({ allowPrivate: true });
      for (const size of [0, 10, 1000]) {
        const result = await c.post(`http://127.0.0.1:${target.port}/${size}`, BODY, { timeoutMs: 5000, maxResponseBytes: 1000 });
        expect(result, String(size)).to.include({ ok: true, truncated: false });
        expect(result.bodyText).to.have.length(size);
      }
    });

    it('never splits a UTF-8 character at the cut', async () => {
      const target = await receiver((_req, res) => res.writeHead(200).end('é'.repeat(100))); // 2 bytes each
      const result = await client({ allowPrivate: true }).post(`http://127.0.0.1:${target.port}/`, BODY, { timeoutMs: 5000, maxResponseBytes: 5 });
      expect(result).to.include({ ok: true, truncated: true, bodyText: 'éé' });
    });
  });

  describe('outcomes', () => {
    it('reports a non-2xx status with its body as a failed attempt', async () => {
      const target = await receiver((_req, res) => res.writeHead(503).end('try later'));
      const result = await client({ allowPrivate: true }).post(`http://127.0.0.1:${target.port}/`, BODY, CALL);
      expect(result).to.include({ ok: false, status: 503, bodyText: 'try later', error: 'HTTP 503', errorCode: 'http_status' });
    });

    it('reports a refused connection as a network error', async () => {
      const gone = await startReceiver();
      const port = gone.port;
      await gone.close();
      const result = await client({ allowPrivate: true }).post(`http://127.0.0.1:${port}/`, BODY, CALL);
      expect(result).to.include({ ok: false, status: null, errorCode: 'network' });
      expect(result.error).to.match(/ECONNREFUSED/);
    });

    it('reuses one connection for calls to the same origin and reports the address each time', async () => {
      const target = await receiver();
      const c = client({ allowPrivate: true });
      const first = await c.post(`http://127.0.0.1:${target.port}/a`, BODY, CALL);
      // Calls a moment apart, as deliveries are: undici opens a second connection when a call
      // is dispatched in the same tick the previous one completes.
      await new Promise((resolve) => setTimeout(resolve, 20));
      const second = await c.post(`http://127.0.0.1:${target.port}/b`, BODY, CALL);
      expect(first.remoteAddress).to.equal('127.0.0.1');
      expect(second.remoteAddress).to.equal('127.0.0.1');
      expect(target.hits.map((h) => h.url)).to.deep.equal(['/a', '/b']);
      expect(target.connections).to.equal(1);
    });

    it('lets caller headers override the defaults, case-insensitively', async () => {
      const target = await receiver();
      await client({ allowPrivate: true }).post(`http://127.0.0.1:${target.port}/`, 'x=1', {
        ...CALL,
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'User-Agent': 'Custom/2' },
      });
      expect(target.hits[0].headers['content-type']).to.equal('application/x-www-form-urlencoded');
      expect(target.hits[0].headers['user-agent']).to.equal('Custom/2');
    });

    it('refuses new calls once closed', async () => {
      const c = createSafeHttpClient({ allowPrivate: true });
      await c.close();
      await c.close(); // idempotent
      let error: unknown;
      try { await c.post('http://127.0.0.1:1/', BODY, CALL); } catch (err) { error = err; }
      expect(error).to.be.instanceOf(Error);
    });

    it('safePost makes one call through a client of its own', async () => {
      const target = await receiver();
      const lookup = tableLookup({ [HOST]: ['127.0.0.1'] });
      const refused = await safePost(`https://${HOST}:${target.port}/`, BODY, { ...CALL, allowPrivate: false, lookup });
      expect(refused).to.include({ ok: false, errorCode: 'refused' });
      const reached = await safePost(`http://${HOST}:${target.port}/`, BODY, { ...CALL, allowPrivate: true, lookup });
      expect(reached).to.include({ ok: true, status: 200 });
      expect(target.hits).to.have.length(1);
    });
  });
});

/** A full collection before measuring, so earlier tests' garbage does not blur the figures. */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}
