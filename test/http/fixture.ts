/**
 * A running daemon with its HTTP server, on real Redis, a real dev relay and a real dev
 * calendar, for the HTTP and webhook tests. Each stack uses its own key prefix and removes
 * its keys when closed.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import { createLogger } from '../../src/daemon/logger.js';
import type { Daemon } from '../../src/daemon/daemon.js';
import type { Config } from '../../src/adapters/config/config.js';
import type { DaemonView } from '../../src/adapters/view/daemon-view.js';
import type { RedisTarget } from '../../src/adapters/redis/connection.js';
import { startHttpServer, type HttpServer } from '../../src/adapters/http/server.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { checkedFetch, expectUndocumented } from '../helpers/openapi.js';
import { startCalendars, startDaemon, startRelays, tempDir, testConfig, uniquePrefix, waitFor } from '../helpers/harness.js';

export const TOKEN = 'test-token-0123456789abcdef';

export interface Stack {
  daemon: Daemon;
  http: HttpServer;
  config: Config;
  relays: DevRelay[];
  calendars: DevCalendar[];
  log: Logger;
  /**
   * fetch against the server; `auth: true` adds the bearer token. Every answer is checked
   * against openapi.json (test/helpers/openapi.ts); `undocumented: true` instead asserts the
   * document does not list the answer (an unknown path, a wrong method).
   */
  get(path: string, init?: RequestOptions): Promise<Response>;
  post(path: string, body: unknown, init?: RequestOptions): Promise<Response>;
  /** Mines on every calendar until each key is confirmed. */
  confirm(keys: readonly string[], timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export type RequestOptions = RequestInit & { auth?: boolean; undocumented?: boolean };

export interface StackOptions {
  prefix?: string;
  http?: Record<string, unknown>;
  overrides?: Record<string, unknown>;
  relays?: number;
  /** Default: the shared test Redis. */
  redisUrl?: RedisTarget;
}

/** The same daemon seen with other HTTP settings, for a second server on another port. */
export function withHttp(d: Daemon, http: Partial<Config['http']>, extra: Partial<DaemonView> = {}): DaemonView {
  return {
    config: { ...d.config, http: { ...d.config.http, port: 0, ...http } },
    redis: d.redis,
    store: d.store,
    state: d.state,
    intakeTargets: d.intakeTargets,
    metrics: d.metrics,
    health: d.health,
    witnesses: d.witnesses,
    signerPubkey: d.signerPubkey,
    anchorLogs: d.anchorLogs,
    intakeQueue: d.intakeQueue,
    queues: d.queues,
    get running() {
      return d.running;
    },
    queueCounts: () => d.queueCounts(),
    ...extra,
  };
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const headersFile = join(tempDir('aer1-http'), 'headers.json');
  const relays = await startRelays(opts.relays ?? 1);
  const calendars = await startCalendars(1, headersFile, 50);
  const prefix = opts.prefix ?? uniquePrefix('http');
  const config = testConfig({
    relays,
    calendars,
    headersFile,
    prefix,
    overrides: { ...opts.overrides, http: { enabled: true, host: '127.0.0.1', port: 0, token: TOKEN, ...opts.http } },
  });
  const daemon = await startDaemon(config, opts.redisUrl);
  const log = createLogger(process.env.AER1_TEST_LOG ?? 'silent');
  const http = await startHttpServer({ daemon, log });
  const withAuth = (init: RequestOptions | undefined): RequestInit => {
    const { auth, undocumented: _, ...rest } = init ?? {};
    const headers = new Headers(rest.headers);
    if (auth) headers.set('Authorization', `Bearer ${TOKEN}`);
    return { ...rest, headers };
  };
  const request = async (path: string, init: RequestOptions | undefined, i: RequestInit): Promise<Response> => {
    const url = `${http.url}${path}`;
    if (!init?.undocumented) return checkedFetch(url, i);
    const res = await fetch(url, i);
    expectUndocumented(i.method ?? 'GET', url, res.status);
    return res;
  };
  const stack: Stack = {
    daemon,
    http,
    config,
    relays,
    calendars,
    log,
    get: (path, init) => request(path, init, withAuth(init)),
    post: (path, body, init) => {
      const i = withAuth(init);
      const headers = new Headers(i.headers);
      if (!headers.has('Content-Type')) headers.set('Content-Type', 'application/json');
      return request(path, init, { ...i, method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
    },
    async confirm(keys, timeoutMs = 30_000) {
      await waitFor(`${keys.length} subjects confirmed`, async () => {
        for (const cal of calendars) if (cal.pendingCount() > 0) await cal.mine();
        const records = await daemon.state.getRecords(keys);
        return records.every((r) => r?.status === 'confirmed');
      }, timeoutMs, 100);
    },
    async close() {
      // the prefix's keys are deleted after the file (test/helpers/clean-shared-redis.ts)
      await http.close();
      await daemon.stop();
      await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
    },
  };
  return stack;
}

