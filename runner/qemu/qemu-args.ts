import type { Accel } from './accel';

/**
 * The QEMU command line of a machine, as a pure function of its configuration, so that the cold
 * boot that makes a snapshot and every machine restored from it have the very same devices (a
 * restore only works onto the machine the state was saved from: same devices, memory, CPU).
 * What differs between the two is only where things are: the disk overlay, the sockets, the log,
 * the incoming state and the service forward.
 */

/** What a snapshot fixes: a restored machine must be started with exactly this. */
export interface MachineHardware {
  accel: Accel;
  memoryMb: number;
  kernel: string;
  initrd: string;
  /** The kernel command line. */
  append: string;
  /** A read-only raw disk with the desktop app (serial `deskhand-app`, mounted at /opt/deskhand), if any. */
  appDisk?: string;
}

/** Where one machine's things are. */
export interface MachinePlaces {
  /** The machine's own qcow2 overlay. */
  disk: string;
  qmpSocket: string;
  agentSocket: string;
  vncSocket: string;
  serialLog: string;
  /** A saved state file to start from (`-incoming`), or none for a cold boot. */
  incomingState?: string;
  /**
   * The one thing the guest may reach: connections to 10.0.2.2:`guestPort` are handed to
   * `command` (run per connection by QEMU's user-mode network, its stdin and stdout the
   * connection), which carries them to the service.
   */
  forward?: { guestPort: number; command: string[] };
}

export const SCREEN = Object.freeze({ width: 1280, height: 800 });
export const GUEST_HOST_ADDRESS = '10.0.2.2';

/** The kernel command line of the image's machines. */
export function kernelAppend(extra: string[] = []): string {
  return [
    'root=/dev/vda', 'rw', 'console=ttyS0', 'quiet', 'loglevel=3', 'systemd.show_status=false',
    // Freed guest pages are zeroed, so the saved state (zero pages cost nothing in it) stays small.
    'init_on_free=1',
    'mitigations=off',
    ...extra,
  ].join(' ');
}

/** QEMU's arguments (after the binary) for one machine. */
export function qemuArgs(name: string, hardware: MachineHardware, places: MachinePlaces): string[] {
  for (const file of [places.disk, hardware.kernel, hardware.initrd, places.qmpSocket, places.agentSocket, places.vncSocket, places.serialLog, places.incomingState ?? '', hardware.appDisk ?? '']) {
    // QEMU's option syntax uses commas (doubled to escape); the paths are the runner's own, kept plain.
    if (file.includes(',')) throw new Error(`A machine file path cannot contain a comma: ${file}`);
  }
  const args = [
    '-name', `deskhand-${name}`,
    '-machine', 'q35',
    ...(hardware.accel === 'kvm' ? ['-accel', 'kvm', '-cpu', 'host'] : ['-accel', 'tcg,tb-size=256', '-cpu', 'max']),
    '-smp', '1',
    '-m', String(hardware.memoryMb),
    '-nodefaults', '-no-user-config', '-display', 'none',
    '-kernel', hardware.kernel, '-initrd', hardware.initrd, '-append', hardware.append,
    '-drive', `if=none,id=root,file=${places.disk},format=qcow2,cache=unsafe,discard=unmap`,
    '-device', 'virtio-blk-pci,drive=root,serial=deskhand-root',
    ...(hardware.appDisk ? ['-drive', `if=none,id=app,file=${hardware.appDisk},format=raw,readonly=on`, '-device', 'virtio-blk-pci,drive=app,serial=deskhand-app'] : []),
    '-device', `VGA,edid=on,xres=${SCREEN.width},yres=${SCREEN.height}`,
    '-device', 'virtio-tablet-pci',
    '-device', 'virtio-rng-pci',
    '-netdev', netdev(places.forward),
    '-device', 'virtio-net-pci,netdev=net0,mac=52:54:00:12:34:56',
    '-device', 'virtio-serial-pci',
    '-chardev', `socket,id=agent,path=${places.agentSocket},server=on,wait=off`,
    '-device', 'virtserialport,chardev=agent,name=org.qemu.guest_agent.0',
    '-chardev', `socket,id=qmp,path=${places.qmpSocket},server=on,wait=off`,
    '-mon', 'chardev=qmp,mode=control',
    '-chardev', `file,id=serial,path=${places.serialLog}`,
    '-serial', 'chardev:serial',
    '-vnc', `unix:${places.vncSocket}`,
  ];
  if (places.incomingState) args.push('-incoming', `exec:cat ${shellQuote(places.incomingState)}`);
  return args;
}

/**
 * User-mode network with `restrict=on`: the guest reaches neither the host nor anything beyond
 * it, except through `guestfwd` (a connection to 10.0.2.2:PORT handed to a command on the
 * host). QEMU refuses a guestfwd on its own host alias, which is 10.0.2.2 by default, so the
 * alias moves to 10.0.2.254 (unreachable anyway with restrict=on) and 10.0.2.2, the guest's
 * gateway, is the service. The same on every machine and on the cold boot of a snapshot, so a
 * restored network state matches. QEMU splits the command at spaces (no shell).
 */
function netdev(forward: MachinePlaces['forward']): string {
  const parts = ['user', 'id=net0', 'restrict=on', 'ipv6=off', 'net=10.0.2.0/24', 'host=10.0.2.254'];
  if (forward) {
    for (const word of forward.command) {
      if (!word || /[\s,]/.test(word)) throw new Error(`A forward command's words cannot be empty or hold spaces or commas: "${word}"`);
    }
    parts.push(`guestfwd=tcp:${GUEST_HOST_ADDRESS}:${forward.guestPort}-cmd:${forward.command.join(' ')}`);
  }
  return parts.join(',');
}

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
