import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The project's version from its package.json, found by walking up from this file: the same
 * from the sources (bin/) and from the compiled build (dist/bin/). `--version` prints it; the
 * reference runner reports it in its hello.
 */
export function projectVersion(): string {
  let folder = __dirname;
  while (!existsSync(path.join(folder, 'package.json')) && path.dirname(folder) !== folder) folder = path.dirname(folder);
  try {
    return (JSON.parse(readFileSync(path.join(folder, 'package.json'), 'utf8')) as { version?: string }).version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}
