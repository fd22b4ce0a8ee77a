#!/usr/bin/env node
/**
 * `deskhand-desktop`: not wired yet. The parts it will drive are in this package (index.ts); the
 * app itself (pairing with a code, the protocol client, the person's window) comes next.
 */
process.stderr.write('deskhand-desktop is not ready yet: this package holds the Linux desktop parts only (see docs/linux-desktop.md).\n');
process.exitCode = 2;
