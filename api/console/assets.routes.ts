import fs from 'node:fs';
import path from 'node:path';
import type { ConsoleRouting } from './console-routing';
import { ASSETS_DIR } from './views';

/**
 * The console's static files: its stylesheet and scripts (api/console/assets/), and libraries
 * served from the project's own dependencies (never a CDN: the console works offline).
 */
const TYPES: Record<string, string> = { '.css': 'text/css; charset=utf-8', '.js': 'application/javascript; charset=utf-8', '.svg': 'image/svg+xml' };
const LIBRARIES: Record<string, string> = {
  // chart.js exports no package.json; its main file sits in dist/ beside the UMD build.
  'chart.umd.js': path.join(path.dirname(require.resolve('chart.js')), 'chart.umd.js'),
};

export function assetRoutes({ router }: ConsoleRouting): void {
  router.get('/assets/:file', async (ctx) => {
    const file = ctx.params.file!;
    const type = TYPES[path.extname(file)];
    const location = LIBRARIES[file] ?? (/^[a-z0-9-]+\.(css|js|svg)$/.test(file) ? path.join(ASSETS_DIR, file) : null);
    if (!type || !location || !fs.existsSync(location)) {
      ctx.status = 404;
      ctx.type = 'text/plain';
      ctx.body = 'Not found';
      return;
    }
    ctx.type = type;
    ctx.set('Cache-Control', 'no-cache');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.body = fs.createReadStream(location);
  });
}
