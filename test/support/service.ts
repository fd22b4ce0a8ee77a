import { startDeskhand, type RunningDeskhand } from '../../bin/start';
import { PROCESS_TYPES, type ProcessType } from '../../shared/queues/catalog';
import { testConfig } from './environment';
import type { Clock } from '../../shared/clock';
import type { HostResolver } from '../../shared/http';
import type { Logger } from '../../shared/logger';
import type { TaskChangeObserver } from '../../shared/tasks/task-change';
import type { TryFlowDeps } from '../../shared/test-runs/try-flow';

export interface TestService {
  running: RunningDeskhand;
  baseUrl: string;
  /** Creates an org with a key; returns both. */
  newOrg(name?: string): Promise<{ orgId: string; key: string; keyId: string }>;
  /** fetch with the key as bearer and JSON in and out. */
  api(key: string | null, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse>;
  stop(): Promise<void>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
}

/** Starts Deskhand in this process against the test world, on an ephemeral port. */
export async function startTestService(
  overrides: Record<string, string> = {},
  types: readonly ProcessType[] = PROCESS_TYPES,
  options: { clock?: Clock; hostResolver?: HostResolver; logger?: Logger; observers?: readonly TaskChangeObserver[]; judge?: TryFlowDeps['judge'] } = {},
): Promise<TestService> {
  const running = await startDeskhand(testConfig(overrides), types, { port: 0, validateResponses: true, ...options });
  const baseUrl = `http://127.0.0.1:${running.web?.port ?? 0}`;
  return {
    running,
    baseUrl,
    async newOrg(name = 'Test org') {
      const { org, apiKey, secret } = await running.container.orgs.create(name);
      return { orgId: org.org_id, key: secret, keyId: apiKey.key_id };
    },
    api: (key, method, path, body, headers = {}) => request(baseUrl, key, method, path, body, headers),
    async stop() {
      await running.stop();
    },
  };
}

export async function request(
  baseUrl: string,
  key: string | null,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<ApiResponse> {
  const response = await fetch(baseUrl + path, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = text;
  if ((response.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
  return { status: response.status, headers: response.headers, body: parsed };
}

/** Polls `condition` with growing sleeps until it returns a truthy value or `timeoutMs` passes. */
export async function waitFor<T>(condition: () => Promise<T> | T, timeoutMs = 10_000, what = 'condition'): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let sleep = 5;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, sleep));
    sleep = Math.min(sleep * 2, 200);
  }
}
