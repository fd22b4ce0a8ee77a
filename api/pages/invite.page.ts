/** The invite page a person opens from the invite link: who is asking, the code, how to connect. */

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);

export interface InvitePage {
  code: string;
  displayName: string;
  greeting: string;
  baseUrl: string;
  status: 'waiting' | 'connected' | 'disconnected' | 'expired' | 'unknown';
}

const STYLE = `
  body { font-family: -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; background: #f4f5f7; color: #1d2433; margin: 0; }
  main { max-width: 560px; margin: 64px auto; background: #fff; border-radius: 14px; padding: 40px; box-shadow: 0 2px 12px rgba(0,0,0,.08); }
  h1 { font-size: 24px; margin: 0 0 12px; }
  .greeting { font-size: 17px; line-height: 1.5; white-space: pre-wrap; }
  .code { font: 600 44px/1.2 "DejaVu Sans Mono", Menlo, monospace; letter-spacing: 4px; text-align: center; background: #eef2ff; color: #2b3a8c; border-radius: 10px; padding: 18px; margin: 28px 0; }
  ol { line-height: 1.7; padding-left: 22px; }
  code { background: #f0f0f0; padding: 2px 6px; border-radius: 4px; }
  .note { color: #6b7280; font-size: 14px; }
`;

export function renderInvitePage(page: InvitePage): string {
  const name = escapeHtml(page.displayName);
  const code = escapeHtml(page.code);
  const body =
    page.status === 'unknown' || page.status === 'expired'
      ? `<h1>This invite is no longer valid</h1>
         <p class="greeting">${page.status === 'expired' ? 'The code has expired.' : 'No invite has this code.'} Ask whoever sent you the link for a new one.</p>`
      : `<h1>${name} would like to help on your computer</h1>
         <p class="greeting" data-testid="greeting">${escapeHtml(page.greeting)}</p>
         <div class="code" data-testid="code" aria-label="Pairing code">${code}</div>
         <ol>
           <li>Open the Deskhand app on your computer.</li>
           <li>Choose <strong>Connect</strong> and enter the code above.</li>
           <li>${name} shows on your screen while it works; press <strong>Stop</strong> at any time.</li>
         </ol>
         <p class="note">Trying it without the app: <code>npx deskhand desktop --code ${code} --base-url ${escapeHtml(page.baseUrl)}</code></p>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${page.status === 'unknown' || page.status === 'expired' ? 'Invite not valid' : `${name}: connect with ${code}`}</title>
<style>${STYLE}</style></head>
<body><main>${body}</main></body></html>`;
}
