import { expect } from 'chai';
import { io, type Socket } from 'socket.io-client';
import { Type } from '@sinclair/typebox';
import { composeDeskhand, type Composition } from '../../shared/composition-root';
import { startWeb, type WebServer } from '../../api/server';
import type { Gateway } from '../../api/sockets/gateway';
import { testConfig } from '../support/environment';
import { request, waitFor } from '../support/service';
import { MAC_DEVICE, RawDesktop } from '../support/raw-desktop';

/** A second kind of computer, as runners will be: a namespace with its own hello and credentials. */
function probeGateway(gone: string[]): Gateway<{ name: string }> {
  return {
    namespace: '/probe',
    name: 'probe',
    peer: 'The runner',
    helloEvent: 'probe:hello',
    helloSchema: Type.Object({ token: Type.String({ minLength: 1 }), name: Type.String({ maxLength: 20 }), slots: Type.Integer({ minimum: 1 }) }),
    async authenticate(hello) {
      const { token, name } = hello as { token: string; name: string };
      if (token !== 'let-me-in') return { ok: false, code: 'unknown_token', message: 'No runner has this token' };
      return { ok: true, data: { name }, reply: { ok: true, runner: name } };
    },
    // Refused after authentication, as a runner revoked while it joined its room is.
    admit: async ({ data }) => (data.name === 'revoked-late' ? { ok: false, code: 'revoked', message: 'Revoked meanwhile' } : undefined),
    events: ['probe:echo'],
    receive: async (data, event, payload) => ({ ok: true, from: data.name, event, payload }),
    gone: async (data) => void gone.push(data.name),
    logFields: (data) => ({ runner: data.name }),
  };
}

describe('socket.io gateways, one per namespace (api/sockets/gateway.ts)', () => {
  let root: Composition;
  let web: WebServer;
  let baseUrl: string;
  let key: string;
  const gone: string[] = [];
  const sockets: Socket[] = [];
  const desktops: RawDesktop[] = [];

  before(async () => {
    root = composeDeskhand(testConfig());
    // The root's gateways, and one more registered beside them.
    web = await startWeb(root.container, { port: 0, gateways: [...root.gateways, probeGateway(gone)] });
    baseUrl = `http://127.0.0.1:${web.port}`;
    ({ secret: key } = await root.container.orgs.create('Gateways org'));
  });
  after(async () => {
    for (const socket of sockets) socket.disconnect();
    for (const desktop of desktops) desktop.close();
    await web.close();
    await root.container.close();
  });

  const probe = async () => {
    const socket = io(`${baseUrl}/probe`, { transports: ['websocket'], reconnection: false, forceNew: true });
    sockets.push(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('connect_error', reject);
    });
    return socket;
  };
  const hello = (socket: Socket, message: unknown) => socket.timeout(5000).emitWithAck('probe:hello', message);
  const rawDesktop = () => {
    const desktop = new RawDesktop(baseUrl);
    desktops.push(desktop);
    return desktop;
  };

  it('refuses a bad hello on the second namespace against its own schema, naming the field, and closes the connection', async () => {
    const socket = await probe();
    const reply = await hello(socket, { token: 'let-me-in', name: 'r1', slots: 0 });
    expect(reply).to.deep.equal({ ok: false, code: 'invalid', message: 'The runner sent a malformed hello: slots must be >= 1' });
    await waitFor(() => socket.disconnected, 3_000, 'the connection to close');
  });

  it('refuses a desktop app’s hello on the second namespace, naming what that namespace needs', async () => {
    const reply = await hello(await probe(), { code: 'K7QX-M2PD', device: MAC_DEVICE, capabilities: {} });
    expect(reply).to.deep.equal({ ok: false, code: 'invalid', message: "The runner sent a malformed hello: hello must have required property 'token'" });
  });

  it('answers a refusal of the gateway’s own authentication with its code', async () => {
    const reply = await hello(await probe(), { token: 'not-a-token', name: 'r2', slots: 1 });
    expect(reply).to.deep.equal({ ok: false, code: 'unknown_token', message: 'No runner has this token' });
  });

  it('takes messages only after an accepted hello, and tells the gateway when the client goes', async () => {
    const socket = await probe();
    const early = await socket.timeout(300).emitWithAck('probe:echo', { n: 0 }).catch((error: Error) => error);
    expect(early).to.be.instanceOf(Error);
    expect(await hello(socket, { token: 'let-me-in', name: 'r3', slots: 2 })).to.deep.equal({ ok: true, runner: 'r3' });
    expect(await socket.timeout(5000).emitWithAck('probe:echo', { n: 1 })).to.deep.equal({ ok: true, from: 'r3', event: 'probe:echo', payload: { n: 1 } });
    socket.disconnect();
    await waitFor(() => gone.includes('r3'), 3_000, 'the gateway to hear the client went');
  });

  it('answers a refusal returned at admission instead of the accepted reply, closes the connection, and tells the gateway it went', async () => {
    const socket = await probe();
    expect(await hello(socket, { token: 'let-me-in', name: 'revoked-late', slots: 1 })).to.deep.equal({ ok: false, code: 'revoked', message: 'Revoked meanwhile' });
    await waitFor(() => socket.disconnected, 3_000, 'the connection to close');
    await waitFor(() => gone.includes('revoked-late'), 3_000, 'the gateway to hear the client went');
  });

  it('leaves /desktop as it is: its own hello schema and its sessions', async () => {
    const refused = await rawDesktop().hello('K7QX-M2PD', { ...MAC_DEVICE, width: 0 });
    expect(refused).to.deep.equal({ ok: false, code: 'invalid', message: 'The app sent a malformed hello: device.width must be >= 1' });
    const { code } = (await request(baseUrl, key, 'POST', '/v1/sessions', {})).body;
    const accepted = await rawDesktop().hello(code);
    expect(accepted).to.include({ ok: true, session_id: code });
    expect((await request(baseUrl, key, 'GET', `/v1/sessions/${code}`)).body.status).to.equal('connected');
  });
});
