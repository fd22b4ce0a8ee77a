/**
 * `npm run bench -- NAME`: runs bench/NAME.ts, which prints its figures beside a baseline
 * measured in the same run. Benchmarks are scripts, not tests: nothing here fails a build.
 */
import path from 'node:path';
import fs from 'node:fs';

async function main(): Promise<void> {
  const name = process.argv[2];
  const available = fs
    .readdirSync(__dirname)
    .filter((file) => file.endsWith('.ts') && file !== 'run.ts')
    .map((file) => file.replace(/\.ts$/, ''));
  if (!name || !available.includes(name)) {
    process.stderr.write(`usage: npm run bench -- NAME   (one of: ${available.join(', ')})\n`);
    process.exit(2);
  }
  const module = (await import(path.join(__dirname, `${name}.ts`))) as { run: (args: string[]) => Promise<void> };
  await module.run(process.argv.slice(3));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
