import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { newMemory, refusal, rememberReply, vendorViolations, type Vendor } from './vendor-schemas';

/**
 * A local stand-in of a model vendor's HTTP API: a real node:http server on 127.0.0.1 that
 * records each request and answers from a queue of canned replies. Given a vendor, it first
 * checks each request as that vendor would (test/support/vendor-schemas.ts): a request the
 * vendor would refuse is answered with the vendor's 400, takes no canned reply, and is listed
 * in `violations`, which tests expect to stay empty.
 */

export interface Recorded {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body: unknown;
  /** Never answer (for timeouts). */
  hang?: boolean;
}

export interface Stub {
  url: string;
  requests: Recorded[];
  /** Why requests were refused as the vendor would refuse them (one entry per refused request). */
  violations: string[];
  reply(...replies: Reply[]): void;
  close(): Promise<void>;
}

export async function startStub(vendor?: Vendor): Promise<Stub> {
  const requests: Recorded[] = [];
  const violations: string[] = [];
  const queue: Reply[] = [];
  const memory = newMemory();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const recorded: Recorded = { method: req.method ?? '', path: (req.url ?? '').split('?')[0]!, headers: req.headers, body: raw ? JSON.parse(raw) : null };
      requests.push(recorded);
      const problems = vendor ? vendorViolations(vendor, recorded.path, recorded.headers, recorded.body, memory) : [];
      if (vendor && problems.length > 0) {
        violations.push(`${recorded.path}: ${problems.join('; ')}`);
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify(refusal(vendor, problems)));
        return;
      }
      const next = queue.shift() ?? { status: 500, body: { error: { message: 'no canned reply left' } } };
      if (next.hang) return;
      if (vendor && (next.status ?? 200) < 300) rememberReply(vendor, next.body, memory);
      res.writeHead(next.status ?? 200, { 'content-type': 'application/json', ...next.headers });
      res.end(JSON.stringify(next.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    violations,
    reply: (...replies) => queue.push(...replies),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One validating stand-in per vendor, and the environment that points the service's keys and base URLs at them. */
export async function startVendorStubs(): Promise<{ anthropic: Stub; openai: Stub; gemini: Stub; env: Record<string, string> }> {
  const [anthropic, openai, gemini] = await Promise.all([startStub('anthropic'), startStub('openai'), startStub('gemini')]);
  const env = {
    ANTHROPIC_API_KEY: 'sk-ant-test',
    ANTHROPIC_BASE_URL: anthropic.url,
    OPENAI_API_KEY: 'sk-test-openai',
    OPENAI_BASE_URL: `${openai.url}/v1`,
    GEMINI_API_KEY: 'gemini-test',
    GEMINI_BASE_URL: gemini.url,
  };
  return { anthropic, openai, gemini, env };
}
