import { expect } from 'chai';
import type { ActionResult, Observation } from '../../shared/desktop/protocol';
import { ADDRESS_BAR_LABEL, SimulatedComputer, launcherFor, type SimulatedComputerOptions } from '../../shared/simulator';
import { REPORT_TEXT } from '../../shared/simulator/computer-state';
import { DOCUMENTS, EFFECTS_LOG, FIREWALL_OFF, INSTALLED_APP, MachineDisk, SENT_MAIL, TRASH } from '../../shared/simulator/machine-disk';

// A small screen keeps PNG encoding quick.
const SCREEN = { width: 800, height: 600 };

function makeComputer(options: Partial<SimulatedComputerOptions> = {}): SimulatedComputer {
  return new SimulatedComputer({ os: 'mac', appVersion: '1.0.20', name: 'disk-test', accessibility: true, ...SCREEN, ...options });
}

async function clickLabel(computer: SimulatedComputer, label: string, double = false): Promise<ActionResult> {
  const point = computer.locate(label);
  if (!point) throw new Error(`no visible label "${label}"; visible: ${labels(computer.inspect()).join(', ')}`);
  return computer.act({ type: 'click', ...point, double });
}

async function openApp(computer: SimulatedComputer, name: string): Promise<ActionResult> {
  const launcher = launcherFor(computer.os, name)!;
  if (launcher.via === 'taskbar') return clickLabel(computer, launcher.label);
  await computer.act({ type: 'key', keys: 'cmd+space' });
  await computer.act({ type: 'type', text: launcher.label });
  return computer.act({ type: 'key', keys: 'enter' });
}

function labels(observation: Observation): string[] {
  return (observation.visible_labels ?? []).map((entry) => entry.label);
}

async function readFile(computer: SimulatedComputer, path: string): Promise<string> {
  return computer.disk.fs.readFile(path);
}

describe('the simulated machine\'s disk', () => {
  it('starts a fresh image with report.txt in Documents holding the report text', async () => {
    const computer = makeComputer();
    expect(await readFile(computer, `${DOCUMENTS}/report.txt`)).to.equal(REPORT_TEXT);
    const files = await openApp(computer, 'Files');
    expect(labels(files.observation)).to.include('report.txt');
  });

  it('shows in Files a document a script wrote, and drops one a script deleted', async () => {
    const computer = makeComputer();
    await openApp(computer, 'Files');
    const written = await computer.runScript('echo "call Bob" > Documents/todo.txt && rm Documents/report.txt', { timeoutMs: 5000 });
    expect(written.exit_code).to.equal(0);
    const screen = computer.observe();
    expect(labels(screen.observation)).to.include('todo.txt').and.not.to.include('report.txt');
  });

  it('moves a file to $HOME/.Trash with Move to Trash, and deletes it with Empty Trash', async () => {
    const computer = makeComputer();
    await openApp(computer, 'Files');
    await clickLabel(computer, 'report.txt');
    await clickLabel(computer, 'Move to Trash');
    expect(await computer.disk.fs.exists(`${DOCUMENTS}/report.txt`)).to.equal(false);
    expect(await readFile(computer, `${TRASH}/report.txt`)).to.equal(REPORT_TEXT);
    await clickLabel(computer, 'Empty Trash');
    const emptied = await computer.act({ type: 'key', keys: 'enter' });
    expect(emptied.observation.text).to.contain('The Trash is empty.');
    expect(await computer.disk.fs.readdir(TRASH)).to.deep.equal([]);
  });

  it('shows in the Trash what a script put in $HOME/.Trash', async () => {
    const computer = makeComputer();
    await computer.runScript('mv Documents/report.txt .Trash/', { timeoutMs: 5000 });
    const files = await openApp(computer, 'Files');
    expect(files.observation.text).to.contain('Trash (1 item)');
    expect(computer.snapshot().files).to.deep.include({ items: [], trash: ['report.txt'] });
  });

  it('opens a document from Files in Notes with the text on the disk, and Cmd+S saves it back', async () => {
    const computer = makeComputer();
    await computer.runScript('printf "line one" > Documents/plan.txt', { timeoutMs: 5000 });
    await openApp(computer, 'Files');
    const opened = await clickLabel(computer, 'plan.txt', true);
    expect(opened.observation.text).to.contain('line one');
    await computer.act({ type: 'type', text: ' and two' });
    await computer.act({ type: 'key', keys: 'cmd+s' });
    expect(await readFile(computer, `${DOCUMENTS}/plan.txt`)).to.equal('line one and two');
  });

  it('saves a new note with Ctrl+S on Windows to Documents/Untitled.txt, which then shows in Files', async () => {
    const computer = makeComputer({ os: 'windows' });
    await openApp(computer, 'Notes');
    await computer.act({ type: 'type', text: 'Shopping: milk' });
    const saved = await computer.act({ type: 'key', keys: 'ctrl+s' });
    expect(saved.ok).to.equal(true);
    expect(await readFile(computer, `${DOCUMENTS}/Untitled.txt`)).to.equal('Shopping: milk');
    const check = await computer.runScript('grep -q milk Documents/Untitled.txt', { timeoutMs: 5000 });
    expect(check.exit_code).to.equal(0);
    const files = await openApp(computer, 'Files');
    expect(labels(files.observation)).to.include('Untitled.txt');
  });

  it('writes each mail sent, from Mail and from mail.example.com, as $HOME/Mail/Sent/N.eml', async () => {
    const computer = makeComputer();
    await openApp(computer, 'Mail');
    await computer.act({ type: 'type', text: 'ann@example.com' });
    await clickLabel(computer, 'Subject');
    await computer.act({ type: 'type', text: 'Report' });
    await clickLabel(computer, 'Message');
    await computer.act({ type: 'type', text: 'See attached.' });
    await clickLabel(computer, 'Send');
    await openApp(computer, 'Browser');
    await clickLabel(computer, ADDRESS_BAR_LABEL);
    await computer.act({ type: 'type', text: 'mail.example.com\n' });
    await clickLabel(computer, 'To');
    await computer.act({ type: 'type', text: 'bob@example.com' });
    await clickLabel(computer, 'Message');
    await computer.act({ type: 'type', text: 'Hello Bob\n' });
    expect(await readFile(computer, `${SENT_MAIL}/1.eml`)).to.equal('To: ann@example.com\nSubject: Report\n\nSee attached.\n');
    expect(await readFile(computer, `${SENT_MAIL}/2.eml`)).to.equal('To: bob@example.com\nSubject: \n\nHello Bob\n');
  });

  it('appends one JSON line with its type to the effects log for each effect', async () => {
    const computer = makeComputer();
    await openApp(computer, 'Settings');
    await clickLabel(computer, 'Turn off firewall');
    await openApp(computer, 'Store');
    await clickLabel(computer, 'Install');
    const lines = (await readFile(computer, EFFECTS_LOG)).trim().split('\n').map((line) => JSON.parse(line));
    expect(lines).to.deep.equal(computer.effects());
    expect(lines.map((line) => line.type)).to.include.members(['firewall_changed', 'installed']);
    const check = await computer.runScript(`grep -c '"type":"installed"' ${EFFECTS_LOG}`, { timeoutMs: 5000 });
    expect(check).to.include({ exit_code: 0 });
    expect(check.output.trim()).to.equal('1');
  });

  it('round-trips through a JSON snapshot: files, folders and modes come back; windows do not', async () => {
    const computer = makeComputer();
    await computer.runScript('mkdir -p Documents/old && echo keep > Documents/old/a.txt && echo note > Documents/note.txt && chmod 600 Documents/note.txt', { timeoutMs: 5000 });
    await openApp(computer, 'Files');
    await openApp(computer, 'Notes');
    const snapshot = JSON.parse(JSON.stringify(await computer.saveDisk()));
    const restored = makeComputer({ disk: MachineDisk.fromSnapshot(snapshot) });
    expect(await restored.saveDisk()).to.deep.equal(snapshot);
    expect(restored.inspect().windows.filter((window) => !window.system)).to.deep.equal([]);
    expect(await readFile(restored, `${DOCUMENTS}/old/a.txt`)).to.equal('keep\n');
    expect((await restored.disk.fs.stat(`${DOCUMENTS}/note.txt`)).mode & 0o777).to.equal(0o600);
    const files = await openApp(restored, 'Files');
    expect(labels(files.observation)).to.include.members(['note.txt', 'old', 'report.txt']);
  });

  it('keeps the firewall switch and the installed app on the disk, so a script sees them and a saved machine keeps them', async () => {
    const computer = makeComputer();
    await openApp(computer, 'Settings');
    await clickLabel(computer, 'Turn off firewall');
    await openApp(computer, 'Store');
    await clickLabel(computer, 'Install');
    const check = await computer.runScript(`test -e ${FIREWALL_OFF} && test -d "${INSTALLED_APP}" && echo both`, { timeoutMs: 5000 });
    expect(check.output).to.equal('both\n');
    const restored = makeComputer({ disk: MachineDisk.fromSnapshot(await computer.saveDisk()) });
    expect(labels((await openApp(restored, 'Settings')).observation)).to.include('Turn on firewall');
    expect(labels((await openApp(restored, 'Store')).observation)).to.include('Installed');
    await restored.runScript(`rm ${FIREWALL_OFF}`, { timeoutMs: 5000 });
    expect(labels((await openApp(restored, 'Settings')).observation)).to.include('Turn off firewall');
  });

  it('counts a screen change in frame only when the screen changed', async () => {
    const computer = makeComputer();
    const first = computer.frame;
    await computer.act({ type: 'screenshot' });
    expect(computer.frame).to.equal(first);
    await openApp(computer, 'Files');
    const opened = computer.frame;
    expect(opened).to.be.greaterThan(first);
    await computer.runScript('touch Documents/new.txt', { timeoutMs: 5000 });
    expect(computer.frame).to.be.greaterThan(opened);
  });

  it('refuses something that is not a snapshot', () => {
    expect(() => MachineDisk.fromSnapshot({ entries: 'no' } as never)).to.throw(TypeError, /snapshot/);
  });
});
