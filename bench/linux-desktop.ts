/**
 * `npm run bench -- linux-desktop`: a click-and-report act on a real X11 desktop through
 * `LinuxComputer` (desktop/src/linux-computer.ts) at 1280×800: Xvfb, openbox, the AT-SPI bus,
 * Chromium (accessibility on) showing a page of buttons this bench serves, and Mousepad beside it.
 * Each act clicks one of the page's buttons, which changes the page's text.
 *
 * Figures, p50 and p95 of each:
 * - the whole act (input, the still-screen wait, capture, PNG and observation), as the app runs it;
 * - input + capture + observation: the same act with the still-screen wait left out (a
 *   LinuxComputer whose quiet time is 0, so it reads one frame), the target's line;
 * - each part alone on a still screen: input (XTEST), capture (MIT-SHM), PNG encoding, the
 *   observation (window list + AT-SPI snapshot + mapping, and the first two apart), and the
 *   still-screen wait after a click;
 * - the AT-SPI snapshot both ways: with the apps' caches (the default) and by the full walk
 *   (`cache: false`), with the D-Bus calls of each, and the two acts again with a computer that
 *   walks;
 * - the peers' way in the same run: `xdotool mousemove X Y click 1` and `scrot` spawned per action,
 *   the PNG read back from its file.
 * The series run in alternating rounds, so that a change in what the host does shows in all.
 * Target: input + capture + observation <= 60 ms p50.
 *
 * `BENCH_SAMPLES` (default 40) samples per line, in `BENCH_ROUNDS` (default 4) rounds.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { AccessibilityClient } from '../desktop/src/accessibility';
import { XInput } from '../desktop/src/input';
import { LinuxComputer } from '../desktop/src/linux-computer';
import { ScreenCapture } from '../desktop/src/screen-capture';
import { STILL_DEFAULTS, waitForStillScreen } from '../desktop/src/screen-still';
import { listWindows } from '../desktop/src/windows';
import { X11Connection } from '../desktop/src/x11-connection';
import type { Point } from '../shared/desktop/protocol';
import { launchChromium, servePages, startDesktop, until, type RealDesktop } from '../test/support/linux-desktop';
import { PROJECT_ROOT } from './support/processes';

const WIDTH = 1280;
const HEIGHT = 800;
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 40);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const WARMUP = 3;
const TARGET_P50_MS = 60;
const BUTTONS = ['Red', 'Green', 'Blue', 'Reset'];

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>Deskhand bench</title></head>
<body style="margin:24px;font:18px sans-serif">
<h1>Colours</h1>
<p id="said">Nothing clicked yet</p>
<p>${BUTTONS.map((label) => `<button style="font-size:20px;padding:10px 24px;margin-right:12px" onclick="said(this)">${label}</button>`).join('')}</p>
<p><a href="#more">More about colours</a></p>
<p><input aria-label="Your name" style="font-size:18px;width:320px"></p>
<script>let n = 0; function said(button) { n++; document.getElementById('said').textContent = button.textContent + ' clicked, ' + n + ' clicks'; }</script>
</body></html>`;

const NOTE = Array.from({ length: 12 }, (_, i) => `Line ${i + 1} of the note Mousepad shows beside the browser.`).join('\n');

/** The desktop's own programs, and the peers' tools; scripts/setup.sh --linux-desktop-bench installs them. */
const DESKTOP_TOOLS = ['Xvfb', 'openbox', 'dbus-daemon', '/usr/libexec/at-spi-bus-launcher', 'chromium', 'mousepad'];
const PEER_TOOLS = ['xdotool', 'scrot'];

function onPath(command: string): boolean {
  const candidates = command.includes('/') ? [command] : (process.env.PATH ?? '').split(':').map((dir) => path.join(dir, command));
  return candidates.some((file) => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Installs what is missing through scripts/setup.sh (apt-get, as root); says whether the peers' tools are there after. */
function ensureTools(): { peers: boolean; why: string | null } {
  const missing = () => [...DESKTOP_TOOLS, ...PEER_TOOLS].filter((tool) => !onPath(tool));
  if (missing().length > 0) {
    process.stderr.write(`linux-desktop: missing ${missing().join(', ')}; running scripts/setup.sh --linux-desktop-bench\n`);
    try {
      execFileSync('bash', [path.join(PROJECT_ROOT, 'scripts', 'setup.sh'), '--linux-desktop-bench'], { stdio: ['ignore', 'inherit', 'inherit'] });
    } catch {
      // said by setup.sh; what is still missing is reported below
    }
  }
  const desktopMissing = DESKTOP_TOOLS.filter((tool) => !onPath(tool));
  if (desktopMissing.length > 0) {
    throw new Error(`linux-desktop needs ${desktopMissing.join(', ')} (apt-get install xvfb openbox at-spi2-core dbus-x11 chromium mousepad, as root: bash scripts/setup.sh --linux-desktop-bench)`);
  }
  const peersMissing = PEER_TOOLS.filter((tool) => !onPath(tool));
  return { peers: peersMissing.length === 0, why: peersMissing.length ? `${peersMissing.join(' and ')} not installed (apt-get install xdotool scrot, as root)` : null };
}

/** A series of timings in milliseconds. */
class Series {
  readonly values: number[] = [];
  constructor(readonly label: string) {}
  add(ms: number): void {
    this.values.push(ms);
  }
  pct(p: number): number {
    const sorted = [...this.values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
  }
}

async function time<T>(series: Series | null, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await work();
  series?.add(performance.now() - started);
  return result;
}

/** Runs a program on the desktop and resolves when it exits 0. */
function runOn(desktop: RealDesktop, command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: desktop.env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited ${code ?? signal}: ${stderr.trim()}`))));
  });
}

export async function run(): Promise<void> {
  const tools = ensureTools();
  const pages = await servePages({ '/colours.html': PAGE });
  // startDesktop ends what it started when it fails; after it, `finally` does.
  const desktop = await startDesktop({ width: WIDTH, height: HEIGHT }).catch(async (error: unknown) => {
    await pages.close();
    throw error;
  });
  const closers: Array<() => Promise<unknown> | unknown> = [];
  try {
    const notePath = path.join(desktop.dir, 'note.txt');
    await writeFile(notePath, NOTE);
    desktop.launch('mousepad', [notePath]);
    launchChromium(desktop, `${pages.origin}/colours.html`, { x: 0, y: 0, width: 880, height: HEIGHT });
    const mousepad = await desktop.waitForWindow((window) => window.app === 'mousepad', 'mousepad', 30_000);
    await desktop.waitForWindow((window) => window.app === 'chromium' && window.title.startsWith('Deskhand bench'), 'chromium showing the page', 60_000);

    // The bench's own connection, capture, input and accessibility client: the same modules the computer is made of.
    const connection = await X11Connection.open(desktop.display);
    closers.push(() => connection.close());
    connection.client.ConfigureWindow(mousepad.id, { x: 890, y: 40, width: 380, height: 600 });
    await desktop.waitForWindow((window) => window.app === 'mousepad' && window.bounds.x >= 880, 'mousepad beside Chromium');
    const input = await XInput.open(connection);
    closers.unshift(() => input.close());
    const capture = new ScreenCapture(connection);
    closers.unshift(() => capture.close());
    const accessibility = await AccessibilityClient.connect(desktop.env.DBUS_SESSION_BUS_ADDRESS);
    closers.unshift(() => accessibility.close());

    const open = (quietMs?: number, walk = false) =>
      LinuxComputer.open({
        display: desktop.display,
        sessionBusAddress: desktop.env.DBUS_SESSION_BUS_ADDRESS,
        appVersion: '0.0.0-bench',
        name: walk ? 'bench-walk' : 'bench',
        ...(quietMs === undefined ? {} : { still: { quietMs } }),
        ...(walk ? { snapshot: { cache: false } } : {}),
      });
    const computer = await open();
    closers.unshift(() => computer.close());
    const unsettled = await open(0);
    closers.unshift(() => unsettled.close());
    // The same acts by a computer that reads the accessibility tree with the full walk.
    const walking = await open(undefined, true);
    closers.unshift(() => walking.close());
    const walkingUnsettled = await open(0, true);
    closers.unshift(() => walkingUnsettled.close());

    // The page's buttons once Chromium's tree shows them, and a point on each.
    const targets = await until(async () => {
      const elements = (await computer.inspect()).elements ?? [];
      const found = BUTTONS.map((label) => elements.find((element) => element.role === 'button' && element.label === label));
      return found.every(Boolean) ? found.map((element) => ({ x: Math.round(element!.bounds.x + element!.bounds.width / 2), y: Math.round(element!.bounds.y + element!.bounds.height / 2) })) : null;
    }, "the page's buttons among the elements", 30_000);
    let turn = 0;
    const next = (): Point => targets[turn++ % targets.length];
    const settle = () => waitForStillScreen(() => capture.frame());

    const s = {
      act: new Series('the whole act: input, still-screen wait, capture, PNG, observation'),
      noSettle: new Series('input + capture + observation (an act, quiet time 0)'),
      input: new Series('input alone (XTEST move + click, one round trip)'),
      capture: new Series('capture alone (MIT-SHM, BGRX to RGBA)'),
      encode: new Series('PNG encoding alone (zlib level 1, off the event loop)'),
      observation: new Series('observation alone (window list + AT-SPI walk + mapping)'),
      windows: new Series('  window list alone (EWMH)'),
      walk: new Series("  AT-SPI snapshot alone (the apps' caches)"),
      fullWalk: new Series('  AT-SPI snapshot alone (the full walk, cache: false)'),
      actWalk: new Series('the whole act, the full walk'),
      noSettleWalk: new Series('input + capture + observation, the full walk'),
      settle: new Series(`still-screen wait alone, after a click (quiet ${STILL_DEFAULTS.quietMs} ms)`),
      inputCapture: new Series('input + capture + PNG, no observation'),
      peerInput: new Series('xdotool mousemove X Y click 1, spawned'),
      peerInputNoDelay: new Series('xdotool mousemove X Y click --delay 0 1, spawned'),
      peerShot: new Series('scrot, spawned, PNG read back'),
      peerBoth: new Series('xdotool + scrot, one act'),
    };
    const facts = { cacheCalls: [] as number[], walkCalls: [] as number[], elements: [] as number[], walkElements: [] as number[], frames: [] as number[], unsettled: 0, pngBytes: [] as number[], peerPngBytes: [] as number[], method: '', perApp: new Map<string, { windows: number; elements: number; depth: number }>() };
    const shotFile = path.join(desktop.dir, 'scrot.png');

    const iteration = async (measured: boolean): Promise<void> => {
      const keep = (series: Series) => (measured ? series : null);
      // The whole act, as the app runs it.
      const result = await time(keep(s.act), () => computer.act({ type: 'click', ...next() }));
      if (!result.ok) throw new Error(`the act failed: ${result.error}`);
      if (measured) facts.elements.push(result.observation.elements?.length ?? 0);

      // The act without the still-screen wait; the screen is let settle (untimed) after it.
      const quick = await time(keep(s.noSettle), () => unsettled.act({ type: 'click', ...next() }));
      if (!quick.ok) throw new Error(`the act failed: ${quick.error}`);
      await settle();

      // The same two acts by the computer that walks.
      const walked = await time(keep(s.actWalk), () => walking.act({ type: 'click', ...next() }));
      if (!walked.ok) throw new Error(`the act failed: ${walked.error}`);
      const quickWalked = await time(keep(s.noSettleWalk), () => walkingUnsettled.act({ type: 'click', ...next() }));
      if (!quickWalked.ok) throw new Error(`the act failed: ${quickWalked.error}`);
      await settle();

      // The parts one after another, the way an act without its settle runs them, but each timed alone.
      const point = next();
      const started = performance.now();
      await time(keep(s.input), () => input.click(point.x, point.y));
      const frame = await time(keep(s.capture), () => capture.frame());
      const png = await time(keep(s.encode), () => capture.encode(frame));
      if (measured) {
        s.inputCapture.add(performance.now() - started);
        facts.pngBytes.push(png.length);
      }
      await settle();

      // The still-screen wait after a click, alone; then the observation on that still screen, as
      // the act reads it right after its wait.
      const clicked = next();
      await input.click(clicked.x, clicked.y);
      const still = await time(keep(s.settle), () => settle());
      if (measured) {
        facts.frames.push(still.frames);
        if (!still.still) facts.unsettled++;
      }
      await time(keep(s.observation), () => unsettled.inspect());

      // The observation's two halves apart, also right after a click and the screen's settling.
      const again = next();
      await input.click(again.x, again.y);
      await settle();
      await time(keep(s.windows), () => listWindows(connection));
      let calls = accessibility.calls;
      const snapshot = await time(keep(s.walk), () => accessibility.snapshot());
      if (measured) facts.cacheCalls.push(accessibility.calls - calls);
      calls = accessibility.calls;
      await time(keep(s.fullWalk), () => accessibility.snapshot({ cache: false }));
      if (measured) {
        facts.walkCalls.push(accessibility.calls - calls);
        facts.walkElements.push(snapshot.windows.reduce((sum, window) => sum + window.elements.length, 0));
        facts.perApp.clear();
        for (const window of snapshot.windows) {
          const app = window.app.toLowerCase();
          const seen = facts.perApp.get(app) ?? { windows: 0, elements: 0, depth: 0 };
          facts.perApp.set(app, { windows: seen.windows + 1, elements: seen.elements + window.elements.length, depth: Math.max(seen.depth, ...window.elements.map((element) => element.depth)) });
        }
      }

      // The peers' way: a process per action. xdotool's click sleeps its --delay (100 ms by
      // default) after the last click too; the line with --delay 0 is the spawn and the X work alone.
      if (tools.peers) {
        const xdotool = (at: Point, ...click: string[]) => runOn(desktop, 'xdotool', ['mousemove', String(at.x), String(at.y), 'click', ...click, '1']);
        await time(keep(s.peerInput), () => xdotool(next()));
        await settle();
        await time(keep(s.peerInputNoDelay), () => xdotool(next(), '--delay', '0'));
        await settle();
        const both = performance.now();
        await xdotool(next());
        const shot = await time(keep(s.peerShot), async () => {
          await runOn(desktop, 'scrot', ['--overwrite', '--silent', shotFile]);
          return readFile(shotFile);
        });
        if (measured) {
          s.peerBoth.add(performance.now() - both);
          facts.peerPngBytes.push(shot.length);
        }
        await settle();
      }
    };

    for (let i = 0; i < WARMUP; i++) await iteration(false);
    const perRound = Math.ceil(SAMPLES / ROUNDS);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < perRound; i++) await iteration(true);
      process.stderr.write(`linux-desktop: round ${round + 1} of ${ROUNDS} done\n`);
    }
    facts.method = capture.method ?? '?';

    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
    const ms = (v: number) => `${v.toFixed(1).padStart(7)} ms`;
    const row = (series: Series) => `${series.label.padEnd(68)} p50 ${ms(series.pct(0.5))}   p95 ${ms(series.pct(0.95))}`;
    const chromiumVersion = (() => {
      try {
        return execFileSync('chromium', ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
      } catch {
        return 'chromium';
      }
    })();
    console.log(
      `linux-desktop: ${WIDTH}×${HEIGHT} Xvfb, openbox, AT-SPI; ${chromiumVersion} (a page of ${BUTTONS.length} buttons, a link, a field) and Mousepad; ` +
        `${s.act.values.length} samples a line in ${ROUNDS} alternating rounds; capture by ${facts.method}; Node ${process.version}`,
    );
    console.log(row(s.act));
    console.log(row(s.noSettle));
    for (const series of [s.input, s.capture, s.encode, s.observation, s.windows, s.walk, s.fullWalk]) console.log(`  ${row(series)}`);
    console.log(`  D-Bus calls per AT-SPI snapshot (median): ${median(facts.cacheCalls)} with the caches, ${median(facts.walkCalls)} by the full walk`);
    console.log(row(s.actWalk));
    console.log(row(s.noSettleWalk));
    const gain = (ours: Series, theirs: Series) => `${((1 - ours.pct(0.5) / theirs.pct(0.5)) * 100).toFixed(0)}%`;
    console.log(`caches against the full walk (p50, less time): snapshot ${gain(s.walk, s.fullWalk)}; whole act ${gain(s.act, s.actWalk)}; input + capture + observation ${gain(s.noSettle, s.noSettleWalk)}`);
    console.log(`  ${row(s.settle)}   (${median(facts.frames)} frames; ${facts.unsettled} at the ${STILL_DEFAULTS.capMs} ms cap)`);
    console.log(row(s.inputCapture));
    console.log(`  observation: ${median(facts.elements)} elements reported (median), AT-SPI walk of ${median(facts.walkElements)} showing elements (${[...facts.perApp].map(([app, f]) => `${app} ${f.elements} in ${f.windows} window${f.windows === 1 ? '' : 's'}, ${f.depth + 1} levels`).join('; ')}); PNG ${(median(facts.pngBytes) / 1024).toFixed(0)} KB`);
    if (tools.peers) {
      console.log(`peers (a process per action; no observation, no wait):`);
      for (const series of [s.peerInput, s.peerInputNoDelay, s.peerShot, s.peerBoth]) console.log(`  ${row(series)}`);
      console.log(`  scrot's PNG ${(median(facts.peerPngBytes) / 1024).toFixed(0)} KB`);
      const ratio = (ours: Series, theirs: Series) => `${(ours.pct(0.5) / theirs.pct(0.5)).toFixed(2)}x`;
      console.log(
        `ratio (p50, ours / the peers'): input ${ratio(s.input, s.peerInput)}; capture + PNG ${((s.capture.pct(0.5) + s.encode.pct(0.5)) / s.peerShot.pct(0.5)).toFixed(2)}x; ` +
          `input + capture + PNG ${ratio(s.inputCapture, s.peerBoth)} (${(s.inputCapture.pct(0.5) / (s.peerInputNoDelay.pct(0.5) + s.peerShot.pct(0.5))).toFixed(2)}x against xdotool --delay 0 + scrot); ` +
          `input + capture + observation ${ratio(s.noSettle, s.peerBoth)} (the peers observe nothing)`,
      );
    } else {
      console.log(`peers: skipped: ${tools.why}`);
    }
    const p50 = s.noSettle.pct(0.5);
    console.log(`target: input + capture + observation p50 ${p50.toFixed(1)} ms against ${TARGET_P50_MS} ms: ${p50 <= TARGET_P50_MS ? 'met' : 'NOT met'}`);
  } finally {
    for (const close of closers) await Promise.resolve(close()).catch(() => undefined);
    await pages.close();
    await desktop.stop();
  }
}
