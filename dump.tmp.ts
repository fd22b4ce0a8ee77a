import { startTestService } from './test/support/service';
(async () => {
  const s = await startTestService({}, ['web']);
  const d = (await s.api(null, 'GET', '/openapi.json')).body;
  require('fs').writeFileSync('/tmp/openapi-after.json', JSON.stringify(d, null, 1));
  await s.stop();
  process.exit(0);
})();
