import { writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * The host end of the guest's one way out. QEMU's user-mode network runs the forward command
 * once per connection the guest opens to 10.0.2.2:PORT, with that connection as its stdin and
 * stdout (and stderr): this script, run by the runner's own node, joins it to the service's
 * address and ends with either side. It writes nothing else to its stdout or stderr (they are
 * the guest's connection).
 */
const FORWARDER = `'use strict';
const net = require('node:net');
const [host, port] = process.argv.slice(2);
const service = net.connect(Number(port), host);
const end = () => process.exit(0);
process.stdin.on('error', end).on('end', () => service.end());
process.stdout.on('error', end);
service.on('error', end).on('close', end);
process.stdin.pipe(service);
service.pipe(process.stdout);
`;

/** Writes the forwarder script into `dir`; resolves with the command QEMU runs per connection. */
export async function writeForwarder(dir: string, host: string, port: number): Promise<string[]> {
  const file = path.join(dir, 'forward.cjs');
  await writeFile(file, FORWARDER);
  return [process.execPath, file, host, String(port)];
}
