import { QemuProcesses } from '../../../runner/qemu/qemu-process';
import { restoreMachine, type Snapshot } from '../../../runner/qemu/qemu-snapshot';

// A stand-in for a runner process that dies: it restores one machine from the snapshot given
// as JSON in argv[2] into the folder argv[3], prints `{"qemu_pid": N}` once the machine is
// ready, and then waits to be killed (the test sends it SIGKILL, so no exit handler runs).

async function main(): Promise<void> {
  const snapshot = JSON.parse(process.argv[2]) as Snapshot;
  const dir = process.argv[3];
  const processes = new QemuProcesses();
  const { machine } = await restoreMachine(snapshot, { name: 'holder', dir, processes });
  process.stdout.write(`${JSON.stringify({ qemu_pid: machine.qemu.pid })}\n`);
  setInterval(() => undefined, 60_000);
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack}\n`);
  process.exit(1);
});
