import fs from 'node:fs';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import type { Container } from '../../shared/container';
import { notFound } from '../../shared/errors';
import { notFound as notFoundError } from '../route-errors';
import { defineRoute, type RouteSpec } from '../routing';

/**
 * The API reference at `/docs`: Swagger UI rendering `/openapi.json`, its script and stylesheet
 * served from the project's own `swagger-ui-dist` (never a CDN), so the page works offline and
 * its Content-Security-Policy lets only this service's own scripts run. `/` points to it.
 */

const SWAGGER_UI_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));

/** Starts Swagger UI on the page; a file of its own because the policy refuses inline scripts. */
const START_SCRIPT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
  });
});
`;

/** The files the page loads: two from swagger-ui-dist, one of ours. */
const ASSETS: Record<string, { type: string; body: () => fs.ReadStream | string }> = {
  'swagger-ui-bundle.js': { type: 'application/javascript; charset=utf-8', body: () => fs.createReadStream(path.join(SWAGGER_UI_DIR, 'swagger-ui-bundle.js')) },
  'swagger-ui.css': { type: 'text/css; charset=utf-8', body: () => fs.createReadStream(path.join(SWAGGER_UI_DIR, 'swagger-ui.css')) },
  'start.js': { type: 'application/javascript; charset=utf-8', body: () => START_SCRIPT },
};

/**
 * Scripts and styles only from this service (Swagger UI sets some styles inline); the document
 * is fetched from here too; nothing else is allowed.
 */
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Deskhand API reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <noscript>The reference needs JavaScript; the document itself is at <a href="/openapi.json">/openapi.json</a>.</noscript>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/start.js"></script>
</body>
</html>
`;

const Index = Type.Object(
  {
    name: Type.String(),
    docs: Type.String({ format: 'uri', description: 'The API reference page.' }),
    openapi: Type.String({ format: 'uri', description: 'The OpenAPI 3.1 document.' }),
    health: Type.String({ format: 'uri', description: 'Answers 200 while the process is up.' }),
  },
  {
    examples: [
      {
        name: 'Deskhand API',
        docs: 'https://deskhand.example.com/docs',
        openapi: 'https://deskhand.example.com/openapi.json',
        health: 'https://deskhand.example.com/healthz',
      },
    ],
  },
);

export function docsRoutes(container: Container): RouteSpec[] {
  const base = container.config.baseUrl.replace(/\/+$/, '');
  return [
    defineRoute({
      method: 'get',
      path: '/',
      operationId: 'index',
      summary: 'Where to start: the reference page, the OpenAPI document and the health check',
      description: 'Points a person or a program that opens the service\'s address to /docs, /openapi.json and /healthz. No authentication.',
      tag: 'Health',
      auth: 'none',
      response: Index,
      errors: [],
      handler: async () => ({ name: 'Deskhand API', docs: `${base}/docs`, openapi: `${base}/openapi.json`, health: `${base}/healthz` }),
    }),
    defineRoute({
      method: 'get',
      path: '/docs',
      operationId: 'docsPage',
      summary: 'The API reference, rendered from /openapi.json',
      description:
        'An HTML page (Swagger UI) listing every operation with its parameters, schemas, errors and examples. Its script and stylesheet come from this service (GET /docs/assets/{file}), so it works without the internet. No authentication.',
      tag: 'Health',
      auth: 'none',
      response: { contentType: 'text/html', description: 'The reference page' },
      errors: [],
      handler: async ({ ctx }) => {
        ctx.type = 'text/html; charset=utf-8';
        ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
        ctx.body = PAGE;
      },
    }),
    defineRoute({
      method: 'get',
      path: '/docs/assets/{file}',
      operationId: 'docsAsset',
      summary: 'A script or stylesheet of the reference page',
      description: 'swagger-ui-bundle.js and swagger-ui.css (from the swagger-ui-dist package) and start.js. 404 not_found for any other name. No authentication.',
      tag: 'Health',
      auth: 'none',
      params: Type.Object({ file: Type.String({ minLength: 1, maxLength: 100, description: 'swagger-ui-bundle.js, swagger-ui.css or start.js.' }) }),
      response: { contentType: 'application/javascript', description: 'The file (text/css for the stylesheet)' },
      errors: [notFoundError('No asset swagger-ui.min.js')],
      handler: async ({ params, ctx }) => {
        const asset = Object.hasOwn(ASSETS, params.file) ? ASSETS[params.file] : undefined;
        if (!asset) throw notFound(`No asset ${params.file}`);
        ctx.type = asset.type;
        ctx.set('Cache-Control', 'public, max-age=3600');
        ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
        ctx.body = asset.body();
      },
    }),
  ];
}
