import { InMemoryFs } from 'just-bash';
import { REPORT_TEXT, type SimulatorEffect } from './computer-state';

/**
 * The simulated computer's disk (docs/reference-runner.md, "The disk"): a
 * just-bash in-memory file system that the apps show and change and that scripts run over.
 * The apps' view of it is read synchronously (a step lays out its screen at once); changes
 * the apps make are written after the step, through the file system's own async calls.
 */

/** `$HOME` on both systems, so that setup and check scripts are the same for mac and windows. */
export const HOME = '/home/user';
export const DOCUMENTS = `${HOME}/Documents`;
export const TRASH = `${HOME}/.Trash`;
export const SENT_MAIL = `${HOME}/Mail/Sent`;
export const EFFECTS_LOG = '/var/log/deskhand/effects.jsonl';
/** Where Notes saves a text that was not opened from a document. */
export const UNTITLED = 'Untitled.txt';
/** Present while the firewall is off (Settings), so that a saved machine keeps the switch. */
export const FIREWALL_OFF = '/etc/deskhand/firewall-off';
/** The app the Store installs, as a folder, so that a saved machine keeps it installed. */
export const INSTALLED_APP = '/Applications/Example Editor.app';

/** The shell's own layout (commands, devices, /proc), made again whenever a shell starts: not part of a saved disk. */
const SHELL_LAYOUT = ['/bin', '/usr/bin', '/dev', '/proc'];

/** A disk as JSON: every file, directory and link, file contents in base64. */
export interface DiskSnapshot {
  format: 1;
  entries: DiskEntry[];
}

export type DiskEntry =
  | { path: string; kind: 'file'; mode: number; base64: string }
  | { path: string; kind: 'dir'; mode: number }
  | { path: string; kind: 'symlink'; target: string };

/** What the apps show of the disk, read at once. */
export interface DiskView {
  /** Names in `$HOME/Documents`, sorted. */
  documents: string[];
  /** Names in `$HOME/.Trash`, sorted. */
  trash: string[];
  firewallOff: boolean;
  installed: boolean;
}

export class MachineDisk {
  private constructor(readonly fs: InMemoryFs) {}

  /** A fresh image's disk: report.txt in Documents, an empty Trash, no mail sent, no effects. */
  static fresh(): MachineDisk {
    const fs = new InMemoryFs();
    for (const dir of [DOCUMENTS, TRASH, SENT_MAIL, '/var/log/deskhand', '/tmp']) fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(`${DOCUMENTS}/report.txt`, REPORT_TEXT);
    return new MachineDisk(fs);
  }

  /** A disk as it was saved. Throws a TypeError on something that is not a snapshot. */
  static fromSnapshot(snapshot: DiskSnapshot): MachineDisk {
    if (snapshot?.format !== 1 || !Array.isArray(snapshot.entries)) throw new TypeError('Not a disk snapshot (format 1).');
    const fs = new InMemoryFs();
    const links: Array<Extract<DiskEntry, { kind: 'symlink' }>> = [];
    for (const entry of snapshot.entries) {
      if (entry.kind === 'dir') fs.mkdirSync(entry.path, { recursive: true });
      else if (entry.kind === 'file') fs.writeFileSync(entry.path, Buffer.from(entry.base64, 'base64'), undefined, { mode: entry.mode });
      else if (entry.kind === 'symlink') links.push(entry);
    }
    const disk = new MachineDisk(fs);
    // Links are made last, once what they point at exists; InMemoryFs has no synchronous symlink.
    disk.pendingLinks = links;
    return disk;
  }

  private pendingLinks: Array<Extract<DiskEntry, { kind: 'symlink' }>> = [];

  /** Finishes what `fromSnapshot` could not do synchronously (symbolic links). */
  async ready(): Promise<void> {
    for (const link of this.pendingLinks.splice(0)) await this.fs.symlink(link.target, link.path);
  }

  /** The whole disk as JSON, less the shell's own layout. */
  async snapshot(): Promise<DiskSnapshot> {
    await this.ready();
    const entries: DiskEntry[] = [];
    for (const path of [...this.fs.getAllPaths()].sort()) {
      if (path === '/' || SHELL_LAYOUT.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))) continue;
      const stat = await this.fs.lstat(path);
      if (stat.isSymbolicLink) entries.push({ path, kind: 'symlink', target: await this.fs.readlink(path) });
      else if (stat.isDirectory) entries.push({ path, kind: 'dir', mode: stat.mode });
      else entries.push({ path, kind: 'file', mode: stat.mode, base64: Buffer.from(await this.fs.readFileBuffer(path)).toString('base64') });
    }
    return { format: 1, entries };
  }

  /** Documents and Trash, from the file system's path list (its only synchronous read). */
  view(): DiskView {
    const documents: string[] = [];
    const trash: string[] = [];
    let firewallOff = false;
    let installed = false;
    for (const path of this.fs.getAllPaths()) {
      if (path === FIREWALL_OFF) firewallOff = true;
      if (path === INSTALLED_APP) installed = true;
      const name = childOf(DOCUMENTS, path);
      if (name) documents.push(name);
      const trashed = childOf(TRASH, path);
      if (trashed) trash.push(trashed);
    }
    return { documents: documents.sort(), trash: trash.sort(), firewallOff, installed };
  }

  /** A document's text, or '' when it cannot be read (a folder, or gone). */
  async readDocument(name: string): Promise<string> {
    try {
      return await this.fs.readFile(`${DOCUMENTS}/${name}`);
    } catch {
      return '';
    }
  }

  async saveDocument(name: string, text: string): Promise<void> {
    await this.fs.mkdir(DOCUMENTS, { recursive: true });
    await this.fs.writeFile(`${DOCUMENTS}/${name}`, text);
  }

  async moveToTrash(name: string): Promise<void> {
    const from = `${DOCUMENTS}/${name}`;
    if (!(await this.fs.exists(from))) return;
    await this.fs.mkdir(TRASH, { recursive: true });
    const to = `${TRASH}/${name}`;
    // The newest of two items with one name is the one kept, as a Trash with one slot per name.
    if (await this.fs.exists(to)) await this.fs.rm(to, { recursive: true, force: true });
    await this.fs.mv(from, to);
  }

  async emptyTrash(): Promise<void> {
    if (!(await this.fs.exists(TRASH))) return;
    for (const name of await this.fs.readdir(TRASH)) await this.fs.rm(`${TRASH}/${name}`, { recursive: true, force: true });
  }

  /** Writes a sent mail as the next `N.eml` in `$HOME/Mail/Sent`. */
  async writeSentMail(mail: { to: string; subject: string; message: string }): Promise<string> {
    await this.fs.mkdir(SENT_MAIL, { recursive: true });
    const numbers = (await this.fs.readdir(SENT_MAIL)).map((name) => /^(\d+)\.eml$/.exec(name)?.[1]).filter(Boolean).map(Number);
    const path = `${SENT_MAIL}/${Math.max(0, ...numbers) + 1}.eml`;
    await this.fs.writeFile(path, `To: ${mail.to}\nSubject: ${mail.subject}\n\n${mail.message}\n`);
    return path;
  }

  async setFirewall(on: boolean): Promise<void> {
    if (on) return this.fs.rm(FIREWALL_OFF, { force: true });
    await this.fs.mkdir('/etc/deskhand', { recursive: true });
    await this.fs.writeFile(FIREWALL_OFF, 'The firewall is off.\n');
  }

  async install(): Promise<void> {
    await this.fs.mkdir(INSTALLED_APP, { recursive: true });
  }

  async appendEffect(effect: SimulatorEffect): Promise<void> {
    await this.fs.mkdir('/var/log/deskhand', { recursive: true });
    await this.fs.appendFile(EFFECTS_LOG, `${JSON.stringify(effect)}\n`);
  }
}

/** The name of `path` when it lies directly in `dir`, else null. */
function childOf(dir: string, path: string): string | null {
  if (!path.startsWith(`${dir}/`)) return null;
  const name = path.slice(dir.length + 1);
  return name && !name.includes('/') ? name : null;
}
