/**
 * The invite page a person opens from the invite link: who is asking, the code, how to connect,
 * and, once their computer has paired, the session's state (connected, disconnected, ended).
 */

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);

export interface InvitePage {
  code: string;
  /** The agent's `display_name` (the service's name when it has none). */
  displayName: string;
  greeting: string;
  baseUrl: string;
  /** The session's status; `unknown` when no invite has the code. */
  status: 'waiting' | 'connected' | 'disconnected' | 'expired' | 'unknown';
  /** Whether a computer has connected with the code (the session's `paired_at`). */
  paired: boolean;
  /** The name the paired computer reported, if any. */
  deviceName: string | null;
  /** How to try it with the reference desktop client: development only (DESKHAND_ENV). */
  developerHint: boolean;
}

// The code stays on one line on a phone (390 px wide): no wrapping, and type that shrinks with the width.
const STYLE = `
  body { font-family: -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; background: #f4f5f7; color: #1d2433; margin: 0; }
  main { max-width: 560px; margin: 64px auto; background: #fff; border-radius: 14px; padding: 40px; box-shadow: 0 2px 12px rgba(0,0,0,.08); }
  h1 { font-size: 24px; margin: 0 0 12px; }
  .greeting { font-size: 17px; line-height: 1.5; white-space: pre-wrap; }
  .code { font: 600 clamp(24px, 9vw, 44px)/1.2 "DejaVu Sans Mono", Menlo, monospace; letter-spacing: .08em; white-space: nowrap; text-align: center; background: #eef2ff; color: #2b3a8c; border-radius: 10px; padding: 18px 12px; margin: 28px 0; }
  .state { border-radius: 10px; padding: 12px 16px; font-size: 16px; line-height: 1.5; }
  .state-connected { background: #e7f6ec; color: #14532d; }
  .state-disconnected { background: #fff4e5; color: #7c2d12; }
  ol { line-height: 1.7; padding-left: 22px; }
  code { background: #f0f0f0; padding: 2px 6px; border-radius: 4px; overflow-wrap: anywhere; }
  .note { color: #6b7280; font-size: 14px; }
  @media (max-width: 480px) { main { margin: 0; border-radius: 0; box-shadow: none; padding: 24px 20px; } }
`;

/** The paired session's state, in a sentence for the person; empty before pairing. */
function stateLine(page: InvitePage, name: string): string {
  if (!page.paired) return '';
  if (page.status === 'connected') {
    const device = page.deviceName ? ` to ${escapeHtml(page.deviceName)}` : '';
    return `<p class="state state-connected" data-testid="state" data-state="connected"><strong>Connected</strong>${device}. ${name} can work on this computer now; press <strong>Stop</strong> in the app at any time.</p>`;
  }
  return `<p class="state state-disconnected" data-testid="state" data-state="disconnected"><strong>Disconnected.</strong> The app is not connected now; to connect again, open it and enter the code below.</p>`;
}

function invalidBody(page: InvitePage): { title: string; body: string } {
  if (page.status === 'expired' && page.paired) {
    return {
      title: 'Session ended',
      body: `<h1>This session has ended</h1>
         <p class="state" data-testid="state" data-state="ended">The code no longer works, and nothing more happens on your computer through it. Ask whoever sent you the link if you need help again.</p>`,
    };
  }
  return {
    title: 'Invite not valid',
    body: `<h1>This invite is no longer valid</h1>
         <p class="greeting">${page.status === 'expired' ? 'The code has expired.' : 'No invite has this code.'} Ask whoever sent you the link for a new one.</p>`,
  };
}

export function renderInvitePage(page: InvitePage): string {
  const name = escapeHtml(page.displayName);
  const code = escapeHtml(page.code);
  const { title, body } =
    page.status === 'unknown' || page.status === 'expired'
      ? invalidBody(page)
      : {
          title: `${name}: connect with ${code}`,
          body: `<h1>${name} would like to help on your computer</h1>
         ${stateLine(page, name)}
         <p class="greeting" data-testid="greeting">${escapeHtml(page.greeting)}</p>
         <div class="code" data-testid="code" aria-label="Pairing code">${code}</div>
         <ol>
           <li>Open the Deskhand app on your computer.</li>
           <li>Choose <strong>Connect</strong> and enter the code above.</li>
           <li>${name} shows on your screen while it works; press <strong>Stop</strong> at any time.</li>
         </ol>${
           page.developerHint
             ? `\n         <p class="note" data-testid="developer-hint">Trying it without the app: <code>npx deskhand desktop --code ${code} --base-url ${escapeHtml(page.baseUrl)}</code></p>`
             : ''
         }`,
        };
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="icon" href="/favicon.ico" type="image/svg+xml">
<style>${STYLE}</style></head>
<body><main>${body}</main></body></html>`;
}
