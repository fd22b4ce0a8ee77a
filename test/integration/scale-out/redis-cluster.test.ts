import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Worker } from 'bullmq';
import { Server } from 'socket.io';
import { io as connectSocket } from 'socket.io-client';
import { ConfigError } from '../../../shared/config';
import { Notifier } from '../../../shared/notifier';
import { createRedis, deleteKeysByPrefix, isCluster, subscriberLike, type Redis } from '../../../shared/redis';
import { JobQueues } from '../../../shared/queues/job-queues';
import { QUEUE_NAMES } from '../../../shared/queues/catalog';
import { createLogger } from '../../../shared/logger';
import { createKeyedLimiter } from '../../../shared/rate-limits';
import { socketIoAdapter, socketIoEmitter, socketIoKey } from '../../../shared/socket-io-redis';
import { watchRedis } from '../../../workers/maintenance/redis-watch';
import { testConfig } from '../../support/environment';
import { startRedisCluster, type OwnRedisCluster } from '../../support/redis-cluster';
import { waitFor } from '../../support/service';

describe('settings for running past one machine', () => {
  it('reads DESKHAND_REDIS_CLUSTER_NODES as host:port seed nodes, which win over REDIS_URL', () => {
    const config = testConfig({ DESKHAND_REDIS_CLUSTER_NODES: ' 10.0.0.5:7000, redis-2.internal:7001,[::1]:7002 ' });
    expect(config.redisClusterNodes).to.deep.equal([
      { host: '10.0.0.5', port: 7000 },
      { host: 'redis-2.internal', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
    expect(testConfig().redisClusterNodes).to.equal(null);
  });

  it('refuses a malformed node list, naming the entry', () => {
    for (const [value, entry] of [['10.0.0.5', '10.0.0.5'], ['10.0.0.5:7000,', ''], ['redis://10.0.0.5:7000', 'redis://10.0.0.5:7000'], ['a:99999', 'a:99999'], ['a:0', 'a:0']]) {
      expect(() => testConfig({ DESKHAND_REDIS_CLUSTER_NODES: value! }), value).to.throw(ConfigError, `"${entry}"`);
    }
    expect(() => testConfig({ DESKHAND_REDIS_CLUSTER_NODES: 'nope' })).to.throw(/host:port pairs separated by commas/);
  });

  it('reads DESKHAND_DATABASE_POOLER and DATABASE_MIGRATION_URL', () => {
    const plain = testConfig();
    expect(plain.databasePooler).to.equal('none');
    expect(plain.databaseMigrationUrl).to.equal(plain.databaseUrl);
    const pooled = testConfig({ DESKHAND_DATABASE_POOLER: 'transaction', DATABASE_MIGRATION_URL: 'postgres://postgres@db.internal:5432/deskhand' });
    expect(pooled.databasePooler).to.equal('transaction');
    expect(pooled.databaseMigrationUrl).to.equal('postgres://postgres@db.internal:5432/deskhand');
    expect(() => testConfig({ DESKHAND_DATABASE_POOLER: 'statement' })).to.throw(ConfigError, /DESKHAND_DATABASE_POOLER must be transaction/);
    expect(() => testConfig({ DATABASE_MIGRATION_URL: 'mysql://x' })).to.throw(ConfigError, /DATABASE_MIGRATION_URL/);
  });
});

describe('Redis Cluster: the parts of Deskhand that use Redis', function () {
  this.timeout(90_000);
  let cluster: OwnRedisCluster;
  const connections: Redis[] = [];
  const connect = (options: Parameters<typeof createRedis>[1] = {}) => {
    const connection = createRedis(testConfig({ DESKHAND_REDIS_CLUSTER_NODES: cluster.seeds }), options);
    connections.push(connection);
    return connection;
  };

  before(async () => {
    cluster = await startRedisCluster();
  });
  after(async () => {
    for (const connection of connections) connection.disconnect();
    await cluster?.close();
  });

  it('gives each queue a hash tag of its own: its keys share a slot, the queues spread over the masters', async () => {
    const redis = connect({ name: 'queues', scripted: true });
    expect(isCluster(redis)).to.equal(true);
    const queues = new JobQueues(redis, 'spread');
    const masters = new Set<number>();
    for (const name of Object.values(QUEUE_NAMES)) {
      expect(queues.prefixOf(name)).to.equal(`{spread:${name}}`);
      masters.add(await cluster.masterOf(queues.prefixOf(name)));
    }
    expect(masters.size, 'masters holding the six queues').to.be.greaterThan(1);
    await queues.enqueue(QUEUE_NAMES.webhooks, 'dispatch', { event_id: 'evt_1' } as never, { jobId: 'dispatch-evt_1' });
    const done: string[] = [];
    const worker = new Worker(QUEUE_NAMES.webhooks, async (job) => void done.push(job.id!), { connection: connect({ blocking: true }), prefix: queues.prefixOf(QUEUE_NAMES.webhooks) });
    worker.on('error', () => undefined);
    try {
      await waitFor(() => done.includes('dispatch-evt_1'), 10_000, 'the job to run');
    } finally {
      await worker.close();
      await queues.close();
    }
  });

  it('notifies across connections over sharded pub/sub, and deletes a prefix on every master', async () => {
    const publisher = connect({ name: 'commands' });
    const notifier = new Notifier(publisher, connect({ subscriber: true, blocking: true }), 'spread');
    const other = new Notifier(publisher, connect({ subscriber: true, blocking: true }), 'spread');
    const heard: string[] = [];
    const leave = await Promise.all(['task:a', 'task:b', 'task:c', 'task:d'].map((name) => other.subscribe(name, (message) => heard.push(`${name}=${message}`))));
    for (const name of ['task:a', 'task:b', 'task:c', 'task:d']) await notifier.publish(name, '1');
    await waitFor(() => heard.length === 4, 5_000, 'four notes');
    expect(heard.sort()).to.deep.equal(['task:a=1', 'task:b=1', 'task:c=1', 'task:d=1']);
    // Sharded channels: each on the master of its slot, none as a plain channel.
    const shardChannels = (await Promise.all((publisher as import('ioredis').Cluster).nodes('master').map((node) => node.call('PUBSUB', 'SHARDCHANNELS', 'spread:*') as Promise<string[]>))).flat();
    expect(shardChannels.sort()).to.deep.equal(['spread:notify:task:a', 'spread:notify:task:b', 'spread:notify:task:c', 'spread:notify:task:d']);
    for (const unsubscribe of leave) await unsubscribe();

    for (let i = 0; i < 50; i++) await publisher.set(`spread:key:${i}`, '1');
    await publisher.set('{spread:tasks}:x', '1');
    await publisher.set('other:key', '1');
    await deleteKeysByPrefix(publisher, 'spread');
    const left = (await Promise.all((publisher as import('ioredis').Cluster).nodes('master').map((node) => node.keys('*')))).flat();
    expect(left).to.deep.equal(['other:key']);
  });

  it('reaches a socket through the sharded adapter: an emitter elsewhere sends to its room and closes it; an acknowledged broadcast counts the web processes', async () => {
    const publisher = connect({ name: 'web' });
    const subscriber = subscriberLike(publisher);
    connections.push(subscriber);
    const server = http.createServer();
    const socketServer = new Server(server, { adapter: socketIoAdapter(publisher, subscriber, socketIoKey('sockets')) });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const namespace = socketServer.of('/desktop');
    namespace.on('connection', (socket) => {
      socket.on('join', async (room: string, ack: () => void) => {
        await socket.join(room);
        ack();
      });
      socket.on('ping?', (ack: (answer: string) => void) => ack('pong'));
    });
    const client = connectSocket(`http://127.0.0.1:${(server.address() as AddressInfo).port}/desktop`, { transports: ['websocket'], reconnection: false, forceNew: true });
    try {
      const heard: unknown[] = [];
      client.on('act', (payload: unknown) => heard.push(payload));
      client.on('asked', (question: string, answer: (reply: string) => void) => answer(`answered ${question}`));
      await new Promise<void>((resolve) => client.once('connect', () => resolve()));
      await client.emitWithAck('join', 'session:ABCD-EFGH');
      // Another process's emitter, on a connection of its own.
      const emitter = socketIoEmitter(connect({ name: 'worker' }), socketIoKey('sockets'), '/desktop');
      await waitFor(() => {
        emitter.to('session:ABCD-EFGH').emit('act', { act_id: 'act_1', bytes: Buffer.from('png') });
        return heard.length > 0;
      }, 5_000, 'the act through the room\'s sharded channel');
      const act = heard[0] as { act_id: string; bytes: Buffer };
      expect(act.act_id).to.equal('act_1');
      expect(Buffer.from(act.bytes).toString()).to.equal('png');
      const answers = await namespace.in('session:ABCD-EFGH').timeout(5_000).emitWithAck('asked', 'q1');
      expect(answers).to.deep.equal(['answered q1']);
      const closed = new Promise<void>((resolve) => client.once('disconnect', () => resolve()));
      emitter.in('session:ABCD-EFGH').disconnectSockets(true);
      await closed;
    } finally {
      client.disconnect();
      await new Promise((resolve) => socketServer.close(resolve));
    }
  });

  it('counts a rate limit in the cluster, not only in the process', async () => {
    const redis = connect({ name: 'commands', commandTimeoutMs: 2000 });
    const limit = createKeyedLimiter({ redis, prefix: 'limits', name: 'sessions', points: 2, durationSeconds: 60 });
    await limit('org_a', 'sessions');
    await limit('org_a', 'sessions');
    const refused = await limit('org_a', 'sessions').then(() => null, (error: Error) => error);
    expect(refused?.message).to.match(/Too many sessions/);
    expect(Number(await redis.get('limits:rl:sessions:org_a'))).to.equal(3);
  });

  it('hears a channel again after its master fails over, and marks the gap', async () => {
    const publisher = connect({ name: 'commands' });
    const notifier = new Notifier(publisher, connect({ subscriber: true, blocking: true }), 'failover');
    const heard: string[] = [];
    await notifier.subscribe('task:x', (message) => heard.push(message));
    const before = notifier.mark('task:x');
    expect(before).to.be.a('string');
    const master = await cluster.masterOf('failover:notify:task:x');
    const { promoted, tookMs } = await cluster.failOver(master);
    // ioredis moves the subscription to the promoted replica on its own.
    await waitFor(async () => {
      await notifier.publish('task:x', 'after').catch(() => undefined);
      return heard.includes('after');
    }, 20_000, 'a note after the failover');
    expect(notifier.mark('task:x')).to.not.equal(before);
    console.log(`      master ${master} killed; ${promoted} promoted in ${tookMs} ms`);
  });

  /**
   * Found in the cluster-and-pooler test: after a failover, a worker's acts to desktops and its
   * long polls' notes were refused with MOVED for minutes. Commands sent in one turn of the event
   * loop went out as one auto-pipeline per node, and ioredis follows a redirect in a pipeline only
   * when every command in it got the same one: two channels' SPUBLISH and a write, each in its own
   * slot, never did, and the client's map of slots stayed wrong.
   */
  it('follows a failed-over master\'s slots when commands to several of them go out together', async () => {
    const redis = connect({ name: 'commands', commandTimeoutMs: 2000 });
    const master = (await cluster.masters()).find((each) => each.replicas.length > 0)!;
    // Three keys in different slots on that master.
    const keys: string[] = [];
    for (let n = 0; keys.length < 3; n++) {
      const key = `together:${n}`;
      if ((await cluster.masterOf(key)) === master.port) keys.push(key);
    }
    const [first, second, written] = keys as [string, string, string];
    const together = () => Promise.all([redis.spublish(first, 'a'), redis.spublish(second, 'b'), redis.set(written, 'c')]);
    await together();
    const { promoted } = await cluster.failOver(master.port);
    // While the client learns where the slots went, a round may fail; then every round succeeds.
    await waitFor(() => together().then(() => true, () => null), 10_000, 'a round of commands to reach the promoted master');
    const refused: string[] = [];
    for (let round = 0; round < 20; round++) await together().catch((error: Error) => refused.push(error.message));
    expect(refused, `rounds refused after the promotion of ${promoted}`).to.deep.equal([]);
    expect(await redis.get(written)).to.equal('c');
  });

  it('the clock keeps a marker beside each queue and rebuilds from PostgreSQL after a failover', async () => {
    const config = testConfig({ DESKHAND_REDIS_CLUSTER_NODES: cluster.seeds, DESKHAND_REDIS_PREFIX: 'watch' });
    const redis = connect({ name: 'commands', commandTimeoutMs: 2000 });
    const queues = new JobQueues(connect({ scripted: true, commandTimeoutMs: 2000 }), config.redisPrefix);
    const watch = watchRedis({ redis, queues, config, logger: createLogger('silent') }, { sweepEveryMs: 15_000, checkEveryMs: 500, settleMs: 200 });
    const rebuilds = async () => (await queues.queue(QUEUE_NAMES.maintenance).getJobs(['waiting', 'delayed', 'active', 'completed'])).filter((job) => job.id?.startsWith('sweep-rebuild')).length;
    try {
      await watch.check();
      for (const name of Object.values(QUEUE_NAMES)) expect(await redis.exists(`{watch:${name}}:clock:present`), name).to.equal(1);
      expect(await rebuilds()).to.equal(1);
      // A master that still has a replica (an earlier test's failover left one without).
      const master = (await cluster.masters()).find((each) => each.replicas.length > 0)!;
      await cluster.failOver(master.port);
      await waitFor(async () => (await rebuilds().catch(() => 0)) >= 2, 20_000, 'a rebuild after the failover');
    } finally {
      watch.stop();
      await queues.close();
    }
  });
});
