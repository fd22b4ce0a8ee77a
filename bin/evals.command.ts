import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { apiFromEnv, errorMessage, requestJson } from './evals-api';
import { registerRunCommand } from './evals-run.command';

/**
 * `deskhand evals …`: an eval team's commands against a running service, through the public API
 * with `DESKHAND_API_KEY` (and `DESKHAND_BASE_URL`, default http://localhost:$PORT): `import`
 * (here) and `run` (evals-run.command.ts); the request helpers both use are in evals-api.ts.
 */

/** The batch endpoint's limits (spec: Limits): 500 cases, 8 MB; a chunk stays a little under the bytes. */
const CHUNK_CASES = 500;
const CHUNK_BYTES = 7 * 1024 * 1024;

export function registerEvalsCommand(program: Command): Command {
  const evals = program.command('evals').description('evals: test cases, test sets, test runs (docs/evals.md)');
  evals
    .command('import')
    .description('create or update test cases from a JSON or YAML file ({ cases: [...] } or a bare list), matched by key; prints { created, updated, test_case_ids }')
    .argument('<file>', 'a .json, .yaml or .yml file')
    .option('--set <test_set_id>', 'also append the cases to this test set (ts_…)')
    .action(async (file: string, options: { set?: string }) => {
      const result = await importCases(readCases(file), { testSetId: options.set, ...apiFromEnv() });
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    });
  registerRunCommand(evals);
  return evals;
}

/** The cases of a file: `{ cases: [...] }` or a bare list, in JSON or YAML (YAML is a superset of JSON: one parser reads both). */
export function readCases(file: string): unknown[] {
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`${file}: ${(error as Error).message.split('\n')[0]}`);
  }
  const cases = Array.isArray(parsed) ? parsed : (parsed as { cases?: unknown } | null)?.cases;
  if (!Array.isArray(cases)) throw new Error(`${file}: expected { cases: [...] } or a list of cases`);
  if (cases.length === 0) throw new Error(`${file}: no cases`);
  return cases;
}

/** Chunks of at most 500 cases and about 7 MB each, in file order. */
function chunks(cases: unknown[]): Array<{ offset: number; cases: unknown[] }> {
  const out: Array<{ offset: number; cases: unknown[] }> = [];
  let current: unknown[] = [];
  let bytes = 0;
  let offset = 0;
  for (const [index, one] of cases.entries()) {
    const size = Buffer.byteLength(JSON.stringify(one)) + 1;
    if (current.length > 0 && (current.length === CHUNK_CASES || bytes + size > CHUNK_BYTES)) {
      out.push({ offset, cases: current });
      current = [];
      bytes = 0;
      offset = index;
    }
    current.push(one);
    bytes += size;
  }
  out.push({ offset, cases: current });
  return out;
}

/**
 * POSTs the cases to `/v1/test_cases/batch` chunk by chunk. Each chunk is all or nothing; a
 * refused chunk stops the import (earlier chunks stay) with the service's message, its
 * `cases[i]` renumbered to the case's place in the file.
 */
export async function importCases(cases: unknown[], options: { baseUrl: string; apiKey: string; testSetId?: string }): Promise<{ created: number; updated: number; test_case_ids: string[] }> {
  const total = { created: 0, updated: 0, test_case_ids: [] as string[] };
  const parts = chunks(cases);
  for (const [n, part] of parts.entries()) {
    const answer = await requestJson<{ data: Array<{ test_case_id: string }>; created: number; updated: number }>(options, 'POST', '/v1/test_cases/batch', {
      cases: part.cases,
      ...(options.testSetId ? { test_set_id: options.testSetId } : {}),
    });
    const body = answer.body;
    if (!answer.ok) {
      const message = errorMessage(answer).replace(/cases\[(\d+)\]/g, (_, i: string) => `cases[${Number(i) + part.offset}]`);
      const done = n > 0 ? ` (cases before cases[${part.offset}] were imported: ${total.created} created, ${total.updated} updated)` : '';
      throw new Error(`import refused (${answer.status}): ${message}${done}`);
    }
    total.created += body!.created;
    total.updated += body!.updated;
    total.test_case_ids.push(...body!.data.map((c) => c.test_case_id));
  }
  return total;
}
