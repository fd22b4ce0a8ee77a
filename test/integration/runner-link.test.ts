import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Server } from 'socket.io';
import { io as connect, type Socket as ClientSocket } from 'socket.io-client';
import { RunnerLink, RUNNERS_NAMESPACE, RunnerEvents, runnerRoom } from '../../shared/runners/runner-link';
import { createRedis, type Redis } from '../../shared/redis';
import { testConfig } from '../support/environment';
import { waitFor } from '../support/service';

/**
 * A web process sends its commands through its own `/runners` namespace: a runner connected to
 * it hears them without a round trip through Redis. Here Redis refuses every publish, so only
 * the namespace can carry them.
 */
describe('RunnerLink in a web process', () => {
  let server: http.Server;
  let ioServer: Server;
  let redis: Redis;
  let runner: ClientSocket;

  beforeEach(async () => {
    server = http.createServer();
    ioServer = new Server(server);
    ioServer.of(RUNNERS_NAMESPACE).on('connection', (socket) => void socket.join(runnerRoom('rn_here')));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const config = testConfig();
    redis = createRedis(config.redisUrl);
    await redis.quit();
    runner = connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}${RUNNERS_NAMESPACE}`, { transports: ['websocket'] });
    await new Promise<void>((resolve) => runner.once('connect', () => resolve()));
    // The server joins it to its room in the connection handler: wait until the room holds it.
    await waitFor(() => ioServer.of(RUNNERS_NAMESPACE).adapter.rooms.get(runnerRoom('rn_here'))?.size, 5_000, 'the runner in its room');
  });

  afterEach(async () => {
    runner.disconnect();
    await new Promise<void>((resolve) => ioServer.close(() => resolve()));
  });

  const command = { command_id: 'cmd_1', type: 'machine.destroy', machine_id: 'mc_1', args: {} };

  it('delivers a command to a runner connected to this process', async () => {
    const link = new RunnerLink(redis, testConfig().redisPrefix);
    link.attach(ioServer.of(RUNNERS_NAMESPACE));
    const received = new Promise((resolve) => runner.once(RunnerEvents.command, resolve));
    link.command('rn_here', command);
    expect(await received).to.deep.equal(command);
  });

  it('closes a runner connected to this process', async () => {
    const link = new RunnerLink(redis, testConfig().redisPrefix);
    link.attach(ioServer.of(RUNNERS_NAMESPACE));
    const closed = new Promise((resolve) => runner.once('disconnect', resolve));
    link.disconnect('rn_here');
    expect(await closed).to.equal('io server disconnect');
  });

  it('without the namespace, reaches runners only through Redis (so here, not at all)', async () => {
    // The link's one way out: a PUBLISH, which the closed connection refuses.
    const published: string[] = [];
    const publish = redis.publish.bind(redis);
    redis.publish = ((channel: string, message: string | Buffer) => {
      published.push(channel);
      return publish(channel, message);
    }) as typeof redis.publish;
    const link = new RunnerLink(redis, testConfig().redisPrefix);
    const heard: string[] = [];
    runner.on(RunnerEvents.command, () => heard.push('command'));
    runner.on('barrier', () => heard.push('barrier'));
    link.command('rn_here', command);
    expect(published).to.have.length(1);
    // A later message through the namespace: a command sent through it would have come first.
    const barrier = new Promise((resolve) => runner.once('barrier', resolve));
    ioServer.of(RUNNERS_NAMESPACE).to(runnerRoom('rn_here')).emit('barrier');
    await barrier;
    expect(heard).to.deep.equal(['barrier']);
  });
});
