/**
 * `npm run sdk:generate`: writes the SDK's types (sdk/src/generated/openapi.ts) from the OpenAPI
 * document the routes build, in this process (no server, no network). Run it after changing a
 * route or a schema; test/integration/sdk-drift.test.ts fails until you do.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadConfig } from '../shared/config';
import { createContainer } from '../shared/container';
import { SDK_TYPES_PATH, sdkTypesOf, servedDocument } from './sdk-types';

async function main(): Promise<void> {
  const container = createContainer(loadConfig({ ...process.env, LOG_LEVEL: 'silent' }));
  try {
    const text = await sdkTypesOf(servedDocument(container));
    await writeFile(join(__dirname, '..', SDK_TYPES_PATH), text);
    process.stdout.write(`wrote ${SDK_TYPES_PATH}\n`);
  } finally {
    await container.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
