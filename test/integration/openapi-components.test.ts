import { expect } from 'chai';
import { Ajv2020 } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { startTestService, type TestService } from '../support/service';

type Operation = { operationId: string; description?: string; requestBody?: any; responses: Record<string, any> };

/** Every operation of the served document, with its method and path. */
function operationsOf(document: any): Array<{ method: string; path: string; operation: Operation }> {
  return Object.entries(document.paths as Record<string, Record<string, Operation>>).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({ method, path, operation })),
  );
}

/** Every `$ref` anywhere in `node`. */
function refsIn(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) refsIn(item, found);
  else if (typeof node === 'object' && node !== null) {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.push(value);
      else refsIn(value, found);
    }
  }
  return found;
}

describe('GET /openapi.json: named schemas, descriptions and examples', function () {
  // Validating every example against its schema is CPU work: slow on a busy 2-core host.
  this.timeout(90_000);
  let service: TestService;
  let document: any;
  before(async () => {
    service = await startTestService({}, ['web']);
    document = (await service.api(null, 'GET', '/openapi.json')).body;
  });
  after(async () => service.stop());

  it('names each resource once in components.schemas', () => {
    const names = Object.keys(document.components.schemas);
    for (const name of ['Task', 'TaskEvent', 'TaskEventPage', 'TaskPending', 'TaskList', 'Session', 'CreatedSession', 'Agent', 'AgentDraft', 'AgentVersion', 'Webhook', 'WebhookDelivery', 'ToolSecret', 'Runner', 'StartState', 'TestCase', 'TestSet', 'TestRun', 'Try', 'TestRunComparison', 'Error', 'LegacyError']) {
      expect(names, name).to.include(name);
    }
    // The task's own fields are written once: nowhere else does a schema say object: task.
    const inlined = JSON.stringify(document.paths).match(/"const":"task"/g) ?? [];
    expect(inlined).to.have.length(0);
  });

  it('references every named schema from somewhere, and refers to none that is missing', () => {
    const refs = refsIn({ paths: document.paths, components: { ...document.components, schemas: Object.fromEntries(Object.entries(document.components.schemas).map(([name, schema]) => [name, schema])) } });
    const referenced = new Set(refs.filter((ref) => ref.startsWith('#/components/schemas/')).map((ref) => ref.split('/').pop()));
    expect(Object.keys(document.components.schemas).filter((name) => !referenced.has(name))).to.deep.equal([]);
    for (const name of referenced) expect(document.components.schemas, `${name} is referenced`).to.have.property(name!);
  });

  it('answers a Task by $ref from every task route', () => {
    const task = { $ref: '#/components/schemas/Task' };
    const json = (path: string, method: string) => document.paths[path][method].responses['200'].content['application/json'].schema;
    expect(json('/v1/tasks/{task_id}', 'get')).to.deep.equal(task);
    expect(json('/v1/sessions/{session_id}/tasks', 'post')).to.deep.equal(task);
    expect(json('/v1/tasks/{task_id}/respond', 'post')).to.deep.equal(task);
    expect(json('/v1/tasks/{task_id}/stop', 'post')).to.deep.equal(task);
    expect(json('/v1/tasks', 'get')).to.deep.equal({ $ref: '#/components/schemas/TaskList' });
    expect(json('/v1/tasks/{task_id}/events', 'get')).to.deep.equal({ $ref: '#/components/schemas/TaskEventPage' });
    expect(document.components.schemas.TaskEventPage.properties.task).to.deep.equal(task);
    expect(document.components.schemas.TaskList.properties.data.items).to.deep.equal(task);
  });

  it('lists the task event types in the type\'s description (a string: clients take new types), and describes replay_url', () => {
    const type = document.components.schemas.TaskEvent.properties.type;
    expect(type.type).to.equal('string');
    for (const name of ['started', 'question', 'approval', 'completed', 'failed', 'stopped']) expect(type.description).to.contain(`\`${name}\``);
    expect(document.components.schemas.Task.properties.replay_url.description).to.include('/console/tasks/');
  });

  it('describes every operation', () => {
    const undescribed = operationsOf(document)
      .filter(({ operation }) => !(typeof operation.description === 'string' && operation.description.length > 20))
      .map(({ method, path }) => `${method.toUpperCase()} ${path}`);
    expect(undescribed).to.deep.equal([]);
  });

  it('gives every JSON request and response an example that validates against its schema', () => {
    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
    const problems: string[] = [];
    let checked = 0;
    const check = (where: string, media: any) => {
      if (!media?.schema) return;
      // One `example`, or named `examples` (an operation's errors of one status, one per code).
      const examples: unknown[] = media.example !== undefined ? [media.example] : Object.values(media.examples ?? {}).map((named: any) => named.value);
      if (examples.length === 0) {
        problems.push(`${where}: no example`);
        return;
      }
      // The schema with the document's components beside it, so that its $refs resolve.
      const validate = ajv.compile({ ...media.schema, components: document.components });
      for (const example of examples) {
        if (!validate(example)) problems.push(`${where}: ${ajv.errorsText(validate.errors)}`);
        checked++;
      }
    };
    for (const { method, path, operation } of operationsOf(document)) {
      const name = `${method.toUpperCase()} ${path}`;
      check(`${name} request`, operation.requestBody?.content?.['application/json']);
      for (const [status, declared] of Object.entries(operation.responses)) {
        const response = declared.$ref ? document.components.responses[declared.$ref.split('/').pop()] : declared;
        check(`${name} ${status}`, response.content?.['application/json']);
      }
    }
    expect(problems).to.deep.equal([]);
    expect(checked).to.be.greaterThan(400);
  });
});
