import type { Middleware } from 'koa';
import type { Container } from '../../shared/container';
import { ApiError } from '../../shared/errors';
import { sameSecret } from '../../shared/auth/same-secret';

export const BULL_BOARD_PATH = '/admin/queues';

/** The admin credential from `Authorization: Bearer <token>` or HTTP Basic (any user, token as password). */
function presentedToken(header: string): string | null {
  const bearer = /^Bearer\s+(\S+)$/i.exec(header);
  if (bearer) return bearer[1]!;
  const basic = /^Basic\s+(\S+)$/i.exec(header);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    return decoded.slice(decoded.indexOf(':') + 1);
  }
  return null;
}

/**
 * Bull Board's page links a web font from a third party (Google Fonts); nothing of Deskhand is
 * fetched from elsewhere, so the link is taken out (the board falls back to the system's fonts)
 * and the page gets a policy that lets it load from this origin only, should a later version
 * link something else. Inline styles and the inline JSON config block stay allowed: the board
 * uses them.
 */
const OFFSITE_LINK = /<link\b[^>]*\bhref=["']?(?:https?:)?\/\/[^>]*>\s*/gi;
const BOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'";

/** An HTML page of the board without its links to third parties. */
function keepBoardOffline(html: string): string {
  return html.replace(OFFSITE_LINK, '');
}

/** Bull Board's Koa middleware over every queue of the catalog. */
async function loadBoard(container: Container): Promise<Middleware> {
  const [{ createBullBoard }, { BullMQAdapter }, { KoaAdapter }] = await Promise.all([import('@bull-board/api'), import('@bull-board/api/bullMQAdapter'), import('@bull-board/koa')]);
  const adapter = new KoaAdapter();
  adapter.setBasePath(BULL_BOARD_PATH);
  createBullBoard({ queues: container.queues.all().map((queue) => new BullMQAdapter(queue)), serverAdapter: adapter });
  return adapter.registerPlugin();
}

/**
 * Bull Board for support at /admin/queues, behind the operator credential `DESKHAND_ADMIN_TOKEN`
 * (HTTP Basic in a browser: any user name, the token as password). Closed when the token is unset.
 * Bull Board is loaded on the first admitted request: a web process nobody opens it on does not
 * carry it (about 7 MB of heap).
 */
export function bullBoard(container: Container): Middleware {
  let board: Promise<Middleware> | null = null;
  const adminToken = container.config.adminToken;
  const prefix = `${BULL_BOARD_PATH}/`;
  // Every other path passes straight on.
  return (ctx, next) => {
    if (ctx.path !== BULL_BOARD_PATH && !ctx.path.startsWith(prefix)) return next();
    if (!adminToken) {
      throw new ApiError('permission', 'Bull Board is closed: set DESKHAND_ADMIN_TOKEN to open it');
    }
    const token = presentedToken(ctx.get('authorization'));
    if (!token || !sameSecret(token, adminToken)) {
      ctx.set('WWW-Authenticate', 'Basic realm="Deskhand queues"');
      throw new ApiError('authentication', 'Bull Board needs the admin credential (DESKHAND_ADMIN_TOKEN)');
    }
    board ??= loadBoard(container).catch((error: unknown) => {
      board = null;
      throw error;
    });
    return board.then(async (middleware) => {
      await middleware(ctx, next);
      if (typeof ctx.body === 'string' && ctx.response.is('html')) {
        ctx.body = keepBoardOffline(ctx.body);
        ctx.set('Content-Security-Policy', BOARD_CSP);
      }
    });
  };
}
