// The measured side of `npm run bench -- sockets`: the real web process (the desktop gateway with
// its Redis adapter, hello against PostgreSQL), with BENCH_SESSIONS waiting sessions made through
// the service's own SessionsService before the bench connects.
import { loadConfig } from '../../shared/config';
import { startDeskhand } from '../../bin/start';
import { DESKTOP_NAMESPACE } from '../../shared/desktop/computer-link';
import { serveSocketProbe } from './socket-probe';

async function main(): Promise<void> {
  const count = Number(process.env.BENCH_SESSIONS ?? 0);
  const running = await startDeskhand(loadConfig({ ...process.env, PORT: '0', LOG_LEVEL: 'silent', DESKHAND_SESSIONS_PER_HOUR: '10000000' }), ['web']);
  const { container } = running;
  const { org, apiKey } = await container.orgs.create('bench sockets');
  const auth = { orgId: org.org_id, keyId: apiKey.key_id, userId: null, role: 'admin' as const, actor: { type: 'api_key' as const, key_id: apiKey.key_id, name: 'bench', prefix: null } };
  const codes: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < count) {
        next++;
        const { session } = await container.sessions.create(auth, {}, `req_bench_${next}`);
        codes.push(session.code);
      }
    }),
  );
  const desktop = running.web!.gateway.io.of(DESKTOP_NAMESPACE);
  serveSocketProbe(() => desktop.sockets.size);
  process.send?.({ type: 'ready', port: running.web!.port, codes });
  process.on('SIGTERM', () => void running.stop().then(() => process.exit(0)));
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
