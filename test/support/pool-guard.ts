import { AsyncLocalStorage } from 'node:async_hooks';

type Prototype = { prototype: Record<string, (...args: any[]) => any> };
/* eslint-disable @typescript-eslint/no-require-imports */
// Knex's client classes (the base one builds queries and hands out pool connections; PostgreSQL's
// starts transactions) and the runner that takes a connection for a query.
const Client = require('knex/lib/client') as Prototype;
const PostgresClient = require('knex/lib/dialects/postgres') as Prototype;
const Runner = require('knex/lib/execution/runner') as Prototype;
/* eslint-enable @typescript-eslint/no-require-imports */

/**
 * Catches a query run on a pool (or a connection taken from it) by code that holds one of that
 * pool's transactions: with as many such transactions as the pool has connections, each waits for
 * another's connection until Knex gives up (60 s). That stalled every try of an eval run once
 * (docs/benchmarks.md, evals, 2026-11-26). Installed in the tests' own process by test/hooks.ts:
 * what runs inside a transaction's callback (and what it awaits) must use the transaction.
 */
const inside = new AsyncLocalStorage<{ pool: unknown }>();
/** Where each such query was built (Deskhand's frames of its stack). */
export const poolInTransaction: string[] = [];

const CREATED_AT = Symbol('created at');

function ourFrames(): string {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 40;
  const stack = new Error('where').stack ?? '';
  Error.stackTraceLimit = limit;
  return stack.split('\n').filter((line) => line.includes(' at ') && !/node_modules|node:|pool-guard/.test(line)).slice(0, 6).join('\n');
}

export function installPoolGuard(): void {
  const transaction = PostgresClient.prototype.transaction!;
  PostgresClient.prototype.transaction = function guardedTransaction(this: { transacting?: boolean }, container: unknown, ...rest: unknown[]) {
    // A savepoint (a transaction's own client) keeps the pool of the transaction it is in.
    const pool = this.transacting ? inside.getStore()?.pool : this;
    const wrapped = typeof container === 'function' && pool ? (trx: unknown) => inside.run({ pool }, () => (container as (trx: unknown) => unknown)(trx)) : container;
    return transaction.call(this, wrapped, ...rest);
  };
  // PostgreSQL's client builds its own query builders; raw statements come from the base client.
  for (const [klass, method] of [[PostgresClient, 'queryBuilder'], [Client, 'raw']] as const) {
    const build = klass.prototype[method]!;
    klass.prototype[method] = function guardedBuild(this: unknown, ...args: unknown[]) {
      const built = build.apply(this, args);
      if (inside.getStore()?.pool === this) built[CREATED_AT] = ourFrames();
      return built;
    };
  }
  const ensureConnection = Runner.prototype.ensureConnection!;
  Runner.prototype.ensureConnection = function guardedEnsure(this: { client: unknown; builder: Record<symbol, string> }, ...args: unknown[]) {
    if (inside.getStore()?.pool === this.client) poolInTransaction.push(this.builder[CREATED_AT] ?? ourFrames());
    return ensureConnection.apply(this, args);
  };
  // Statements run straight through pg (shared/db/knex.ts, runPrepared) take a connection themselves.
  const acquire = Client.prototype.acquireConnection!;
  Client.prototype.acquireConnection = function guardedAcquire(this: unknown, ...args: unknown[]) {
    if (inside.getStore()?.pool === this && !new Error().stack?.includes('Runner.')) poolInTransaction.push(ourFrames());
    return acquire.apply(this, args);
  };
}
