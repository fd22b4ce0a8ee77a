import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SDK_TYPES_PATH, sdkTypesOf, servedDocument } from '../../scripts/sdk-types';
import { startTestService, type TestService } from '../support/service';

describe('the SDK types (sdk/src/generated/openapi.ts)', () => {
  let service: TestService;
  before(async () => {
    service = await startTestService({}, ['web']);
  });
  after(async () => service.stop());

  it('are what openapi-typescript makes of the served /openapi.json', async function () {
    this.timeout(60_000);
    const served = await service.api(null, 'GET', '/openapi.json');
    expect(served.status).to.equal(200);
    const expected = await sdkTypesOf(served.body);
    const checkedIn = await readFile(join(__dirname, '..', '..', SDK_TYPES_PATH), 'utf8');
    // Not a deep-equal of the texts: a diff of 15,000 lines says less than the instruction.
    if (checkedIn !== expected) {
      const lines = { checkedIn: checkedIn.split('\n'), expected: expected.split('\n') };
      const differing = lines.expected.findIndex((line, i) => line !== lines.checkedIn[i]);
      const at = differing === -1 ? lines.expected.length : differing;
      expect.fail(
        `${SDK_TYPES_PATH} differs from the served /openapi.json (first at line ${at + 1}: ` +
          `${JSON.stringify(lines.checkedIn[at])} instead of ${JSON.stringify(lines.expected[at])}). Run \`npm run sdk:generate\` and commit the result.`,
      );
    }
  });

  it('come from the same document whether built in-process (npm run sdk:generate) or served', async () => {
    const served = (await service.api(null, 'GET', '/openapi.json')).body;
    const built = servedDocument(service.running.container);
    expect(await sdkTypesOf(built)).to.equal(await sdkTypesOf(served));
  });

  it('name the resources a client needs', async () => {
    const checkedIn = await readFile(join(__dirname, '..', '..', SDK_TYPES_PATH), 'utf8');
    for (const name of ['Task', 'TaskEvent', 'TaskEventPage', 'Session', 'CreatedSession', 'Webhook', 'Error']) {
      expect(checkedIn, name).to.match(new RegExp(`^        ${name}: `, 'm'));
    }
  });
});
