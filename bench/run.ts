/**
 * `npm run bench -- NAME`: runs bench/NAME.ts, which prints its figures beside a baseline
 * measured in the same run. Benchmarks are scripts, not tests: nothing here fails a build.
 * `npm run bench` runs them compiled (bench/support/processes.ts, COMPILED).
 */
import path from 'node:path';
import fs from 'node:fs';

const extension = path.extname(__filename);

async function main(): Promise<void> {
  const name = process.argv[2];
  const available = fs
    .readdirSync(__dirname)
    .filter((file) => file.endsWith(extension) && !file.endsWith('.d.ts') && file !== `run${extension}`)
    .map((file) => file.slice(0, -extension.length));
  if (!name || !available.includes(name)) {
    process.stderr.write(`usage: npm run bench -- NAME   (one of: ${available.join(', ')})\n`);
    process.exit(2);
  }
  // Benchmarks measure the service, not the plans' limits: their orgs (made here and in the
  // servers they fork) are on the operator's own plan unless told otherwise (docs/billing.md).
  process.env.DESKHAND_DEFAULT_PLAN ??= 'internal';
  const module = (await import(path.join(__dirname, `${name}${extension}`))) as { run: (args: string[]) => Promise<void> };
  await module.run(process.argv.slice(3));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
