import { expect } from 'chai';
import { Validator } from '@seriousme/openapi-schema-validator';
import { createApp } from '../../api/app';
import { koaPath } from '../../api/routing';
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
