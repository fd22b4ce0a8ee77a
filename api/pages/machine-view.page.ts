/**
 * The live view of an open start state's machine (docs/evals.md, "The live view"): its screen,
 * refreshed as it changes, and the person's clicks, typing and keys sent to it. The page's own
 * address carries the capability token; its script uses the two addresses beside it
 * (`screen.png`, `input`) and nothing else.
 */

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);

export interface MachineViewPage {
  name: string;
  expiresAt: string;
  /** The script's nonce (Content-Security-Policy). */
  nonce: string;
}

const STYLE = `
  body { font-family: -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; background: #1d2433; color: #e5e7eb; margin: 0; }
  header { display: flex; gap: 16px; align-items: baseline; padding: 10px 16px; }
  h1 { font-size: 16px; margin: 0; }
  .note { color: #9ca3af; font-size: 13px; }
  #status { margin-left: auto; font-size: 13px; }
  main { padding: 0 16px 16px; }
  #screen { max-width: 100%; cursor: crosshair; outline: none; border-radius: 6px; display: block; background: #000; min-height: 200px; }
  #screen:focus { box-shadow: 0 0 0 3px #6366f1; }
`;

/** Keys sent by name (the desktop protocol's key names); other keys are typed as text. */
const SCRIPT = `
(() => {
  const screen = document.getElementById('screen');
  const status = document.getElementById('status');
  const base = location.pathname.replace(/\\/$/, '');
  let frame = -1, url = null, busy = false, typed = '', typing = null;
  const NAMED = { Enter: 'enter', Backspace: 'backspace', Tab: 'tab', Escape: 'escape', Delete: 'delete', ArrowUp: 'up', ArrowDown: 'down', ArrowLeft: 'left', ArrowRight: 'right', ' ': 'space' };
  const say = (text) => { status.textContent = text; };
  async function refresh() {
    if (busy) return;
    busy = true;
    try {
      const response = await fetch(base + '/screen.png', { headers: frame >= 0 ? { 'If-None-Match': '"' + frame + '"' } : {}, cache: 'no-store' });
      if (response.status === 200) {
        frame = Number(response.headers.get('X-Frame'));
        const next = URL.createObjectURL(await response.blob());
        screen.src = next;
        if (url) URL.revokeObjectURL(url);
        url = next;
        screen.dataset.frame = String(frame);
        say('Live');
      } else if (response.status === 409) {
        say('The machine is starting…');
      } else if (response.status === 404) {
        say('This view has ended: the machine was saved, closed or deleted.');
        clearInterval(timer);
      } else if (response.status !== 304) {
        say('The machine did not answer (' + response.status + '); retrying…');
      }
    } catch (error) {
      say('Cannot reach the service; retrying…');
    } finally {
      busy = false;
    }
  }
  async function send(input) {
    const response = await fetch(base + '/input', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(input) });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      say((body.error && body.error.message) || ('Input refused (' + response.status + ')'));
    }
    await refresh();
  }
  async function flushTyping() {
    clearTimeout(typing);
    typing = null;
    if (!typed) return;
    const text = typed;
    typed = '';
    await send({ type: 'type', text });
  }
  screen.addEventListener('click', async (event) => {
    screen.focus();
    await flushTyping();
    const box = screen.getBoundingClientRect();
    const x = Math.round((event.clientX - box.left) * (screen.naturalWidth / box.width));
    const y = Math.round((event.clientY - box.top) * (screen.naturalHeight / box.height));
    await send({ type: 'click', x, y });
  });
  screen.addEventListener('keydown', async (event) => {
    const combo = event.metaKey || event.ctrlKey || event.altKey;
    if (!combo && event.key.length === 1) {
      event.preventDefault();
      typed += event.key;
      clearTimeout(typing);
      typing = setTimeout(flushTyping, 150);
      return;
    }
    const name = NAMED[event.key] || (event.key.length === 1 ? event.key.toLowerCase() : null);
    if (!name) return;
    event.preventDefault();
    await flushTyping();
    const keys = [event.metaKey && 'cmd', event.ctrlKey && 'ctrl', event.altKey && 'alt', event.shiftKey && combo && 'shift', name].filter(Boolean).join('+');
    await send({ type: 'key', keys });
  });
  const timer = setInterval(refresh, 1000);
  refresh();
})();
`;

export function renderMachineViewPage(page: MachineViewPage): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(page.name)} — live view</title>
<style>${STYLE}</style>
</head>
<body>
<header>
  <h1>${escapeHtml(page.name)}</h1>
  <span class="note">Click the picture, then type. Open until ${escapeHtml(page.expiresAt)} unless saved.</span>
  <span id="status" role="status">Connecting…</span>
</header>
<main><img id="screen" data-testid="screen" tabindex="0" alt="The machine's screen"></main>
<script nonce="${page.nonce}">${SCRIPT}</script>
</body>
</html>`;
}
