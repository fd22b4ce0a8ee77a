/**
 * The systems a desktop app runs on, and the one rule that reads a system off a name: what an app
 * reports as `device.os`, or a machine image's id (`macos-15`, `windows-11`, `debian-12`). The
 * models' backends, the machines' rows and the simulated hypervisor all ask here.
 */

export const DESKTOP_OSES = ['mac', 'windows', 'linux'] as const;
export type DesktopOs = (typeof DESKTOP_OSES)[number];

/** First words of image ids and `device.os` values that name a Linux system. */
const LINUX_NAMES: ReadonlySet<string> = new Set([
  'linux',
  'debian',
  'ubuntu',
  'fedora',
  'centos',
  'rhel',
  'rocky',
  'alma',
  'almalinux',
  'alpine',
  'arch',
  'archlinux',
  'opensuse',
  'suse',
  'mint',
  'kali',
  'nixos',
  'gentoo',
  'manjaro',
  'pop',
  'popos',
  'elementary',
  'x11',
]);

/**
 * An image's OS by its id: `macos…` is a Mac, `windows…` a Windows PC, an id whose first word
 * names a Linux distribution (`debian-12`, `ubuntu-24`) is `linux`; any other image is named by
 * its first word (`haiku-r1` is `haiku`), which no desktop app serves.
 */
export function osOfImage(image: string): string {
  const name = image.trim().toLowerCase();
  if (name.startsWith('macos') || name === 'mac' || name.startsWith('mac-')) return 'mac';
  if (name.startsWith('windows')) return 'windows';
  const first = name.split(/[-_.\s]/)[0] || name;
  return LINUX_NAMES.has(first) ? 'linux' : first;
}

/**
 * The system a `device.os` value names, for choosing keys and how apps open: `windows`, `linux`
 * (or a Linux distribution's name), and anything else is treated as a Mac, the first system the
 * apps ran on.
 */
export function desktopOs(os: string): DesktopOs {
  const named = osOfImage(os);
  return named === 'windows' || named === 'linux' ? named : 'mac';
}
