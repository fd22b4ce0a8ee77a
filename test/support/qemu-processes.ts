import { readdirSync, readFileSync } from 'node:fs';

/** Where the QEMU runner keeps its machines' folders, one per runner process (`RUN_ROOT/PID/`; runner/qemu/qemu-provider.ts). */
export const QEMU_RUN_ROOT = '/tmp/deskhand-qemu';

/** The QEMU processes whose command line names `dir` (a test's or a runner's machine folders), from /proc. */
export function qemuProcessesIn(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes('qemu-system') && cmdline.includes(dir)) pids.push(Number(entry));
    } catch {
      // Ended meanwhile.
    }
  }
  return pids;
}

/** The QEMU processes of the runner process `runnerPid`. */
export function qemuOfRunner(runnerPid: number): number[] {
  return qemuProcessesIn(`${QEMU_RUN_ROOT}/${runnerPid}/`);
}
