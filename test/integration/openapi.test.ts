import { expect } from 'chai';
import { Validator } from '@seriousme/openapi-schema-validator';
import { createApp } from '../../api/app';
import { koaPath } from '../../api/routing';
import { isLegacyPath } from '../../api/legacy-paths';
import { startTestService, type TestService } from '../support/service';

describe('GET /openapi.json', () => {
  let service: TestService;
  let document: any;
  before(async () => {
    service = await startTestService({}, ['web']);
    document = (await service.api(null, 'GET', '/openapi.json')).body;
  });
  after(async () => service.stop());

  it('is a valid OpenAPI 3.1 document, version 1.0.0', async () => {
    const validator = new Validator();
    const result = await validator.validate(document);
    expect(result.errors ?? [], JSON.stringify(result.errors)).to.deep.equal([]);
    expect(result.valid).to.equal(true);
    expect(document.openapi).to.equal('3.1.0');
    expect(document.info.version).to.equal('1.0.0');
  });

  it('lists every route the router serves, and nothing else', () => {
    const { routers } = createApp(service.running.container);
    const served = new Set<string>();
    for (const layer of routers.flatMap((router) => router.stack)) for (const method of layer.methods) if (method !== 'HEAD') served.add(`${method} ${layer.path}`);
    const documented = new Set<string>();
    for (const [path, operations] of Object.entries(document.paths as Record<string, object>)) {
      for (const method of Object.keys(operations)) documented.add(`${method.toUpperCase()} ${koaPath(path)}`);
    }
    expect([...served].sort()).to.deep.equal([...documented].sort());
    expect(served.size).to.be.greaterThan(3);
  });

  it('documents 503 unavailable with Retry-After for every operation that uses PostgreSQL or Redis, declared once', () => {
    const resolve = (response: any) => (response?.$ref ? document.components.responses[response.$ref.split('/').pop()] : response);
    const without = new Set(['/healthz', '/readyz', '/openapi.json', '/', '/docs', '/docs/assets/{file}']);
    let counted = 0;
    for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        const unavailable = resolve(operation.responses['503']);
        if (without.has(path)) {
          expect(unavailable?.description ?? '', `${method} ${path}`).not.to.include('unavailable');
          continue;
        }
        expect(unavailable, `${method} ${path} documents 503`).to.be.an('object');
        expect(unavailable.description, `${method} ${path}`).to.include('`unavailable`');
        expect(unavailable.headers['Retry-After'].schema).to.include({ type: 'integer' });
        const schema = isLegacyPath(path) ? '#/components/schemas/LegacyError' : '#/components/schemas/Error';
        expect(unavailable.content['application/json'].schema.$ref, `${method} ${path}`).to.equal(schema);
        counted++;
      }
    }
    expect(counted).to.be.greaterThan(30);
    expect(document.paths['/v1/tasks/{task_id}'].get.responses['503']).to.deep.equal({ $ref: '#/components/responses/Unavailable' });
    // An operation with a 503 of its own keeps it beside `unavailable`.
    const start = document.paths['/v1/sessions/{session_id}/tasks'].post.responses['503'];
    expect(start.description).to.include('model_unavailable').and.include('`unavailable`');
    expect(document.paths['/readyz'].get.responses['503'].description).to.include('not_ready');
  });

  it('documents the error shape for every /v1 operation', () => {
    for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
      if (!path.startsWith('/v1')) continue;
      for (const operation of Object.values(operations)) {
        expect(operation.responses['401'].content['application/json'].schema.$ref, path).to.equal('#/components/schemas/Error');
        expect(operation.security).to.deep.equal([{ apiKey: [] }]);
      }
    }
  });
});
