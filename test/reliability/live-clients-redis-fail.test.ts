/**
 * Redis failing under a replaying live client. The built daemon (a child process) on a private
 * redis-server with a 16 MB history; a WebSocket and an SSE client replay it from the start
 * and, several XRANGE pages in, Redis refuses the reads (ACL takes XRANGE away: a command
 * error), stops, or freezes (SIGSTOP). The daemon lives and answers; the client is closed with
 * a reason naming the cause (WebSocket 1011, SSE: the response ends) within a bound instead of
 * hanging; once Redis is back a new client resumes from the last id it got with nothing lost
 * or repeated, and live events flow again. Once with one shard, once with three (the merged feed).
 */
import http from 'node:http';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import WebSocket from 'ws';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, startEmbeddedRedis, type EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { Issuer, privateRedis, spawnDaemon, startCalendars, stopChild, tempDir, testConfig, waitFor } from '../helpers/harness.js';
import { parseSse } from '../http/clients.js';

/** Entries per shard stream: about 16 MB of history in all, far more than the loopback buffers of a paused client hold. */
const ENTRIES = 8000;
const PAD = 'x'.repeat(2000);
/** How long a failed replay may take to close its client. */
const CLOSE_BOUND_MS = 10_000;
const REDIS_TIMEOUT_MS = 1000;

interface Closed {
  code: number;
  reason: string;
  ms: number;
}

/** A WebSocket replaying from `since` (null: live only): the keys and the last id it got; pauses reading after `pauseAfter` messages until resumed. */
function wsReplay(base: string, since: string | null, pauseAfter = Infinity) {
  const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/ws${since === null ? '' : `?since=${encodeURIComponent(since)}`}`);
  const keys: string[] = [];
  let last = since ?? '';
  let pausedAt: (() => void) | null = null;
  const paused = new Promise<void>((r) => (pausedAt = r));
  let closedAt = 0;
  ws.on('message', (data) => {
    const m = JSON.parse(String(data)) as { id: string; key: string };
    keys.push(m.key);
    last = m.id;
    if (keys.length === pauseAfter) {
      ws.pause();
      pausedAt!();
    }
  });
  ws.on('error', () => undefined);
  const closed = new Promise<Closed>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: String(reason), ms: Date.now() - closedAt })));
  return {
    ws,
    keys,
    get last() {
      return last;
    },
    paused,
    /** Reads on; the close that follows is timed from here. */
    resume() {
      closedAt = Date.now();
      ws.resume();
    },
    closed,
  };
}

/** An SSE request replaying from Last-Event-ID `since`, read as raw text; pauses after `pauseAfter` events until resumed. */
function sseReplay(base: string, since: string, pauseAfter = Infinity) {
  let text = '';
  const keys: string[] = [];
  let last = since;
  let buffer = '';
  let pausedAt: (() => void) | null = null;
  const paused = new Promise<void>((r) => (pausedAt = r));
  let res: http.IncomingMessage | null = null;
  let endedAt = 0;
  let comments: string[] = [];
  const req = http.get(`${base}/v1/events`, { headers: { Accept: 'text/event-stream', 'Last-Event-ID': since } });
  const ended = new Promise<{ how: 'end' | 'aborted' | 'error'; status: number; ms: number }>((resolve) => {
    req.on('error', () => resolve({ how: 'error', status: res?.statusCode ?? 0, ms: Date.now() - endedAt }));
    req.on('response', (r) => {
      res = r;
      r.setEncoding('utf8');
      r.on('data', (chunk: string) => {
        text += chunk;
        buffer += chunk;
        const parsed = parseSse(buffer);
        buffer = parsed.rest;
        comments = comments.concat(parsed.comments);
        for (const e of parsed.events) {
          keys.push((JSON.parse(e.data) as { key: string }).key);
          last = e.id!;
          if (keys.length === pauseAfter) {
            r.pause();
            pausedAt!();
          }
        }
      });
      r.on('end', () => resolve({ how: 'end', status: r.statusCode ?? 0, ms: Date.now() - endedAt }));
      r.on('aborted', () => resolve({ how: 'aborted', status: r.statusCode ?? 0, ms: Date.now() - endedAt }));
      r.on('error', () => resolve({ how: 'error', status: r.statusCode ?? 0, ms: Date.now() - endedAt }));
    });
  });
  return {
    keys,
    get last() {
      return last;
    },
    get text() {
      return text;
    },
    get comments() {
      return comments;
    },
    paused,
    resume() {
      endedAt = Date.now();
      res?.resume();
    },
    ended,
    close: () => req.destroy(),
  };
}

/** Resolves once `p` does, rejects after `ms` naming `what`. */
function within<T>(what: string, p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}

/** Every key once, and nothing else: what the first connection and its resumption got together. */
function expectWhole(got: readonly string[], all: readonly string[]): void {
  const dupes = got.length - new Set(got).size;
  expect(dupes, 'keys repeated').toBe(0);
  const missing = all.filter((k) => !got.includes(k));
  expect(missing.length, `keys lost (first: ${missing.slice(0, 3).join(', ')})`).toBe(0);
  expect(got.length).toBe(all.length);
}

describe.each([1, 3])('Redis failing during a live client replay (redis.shards %i)', (shards) => {
  let redis: EmbeddedRedis | null = null;
  let child: ChildProcess | null = null;
  let admin: Redis | null = null;
  let issuer: Issuer | null = null;
  let calendars: DevCalendar[] = [];
  afterAll(async () => {
    await Promise.all(calendars.map((c) => c.close()));
    if (child) await stopChild(child);
    admin?.disconnect();
    await issuer?.close();
    await redis?.stop();
  });

  it('the daemon lives, the client is closed naming the cause, and a new one resumes with nothing lost', { timeout: 240_000 }, async () => {
    redis = await privateRedis(true);
    const { dir, port: redisPort } = redis;
    admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    admin.on('error', () => undefined);
    const port = await freePort();
    // a witness the daemon may start with; nothing is anchored here
    const headersFile = join(tempDir('headers'), 'headers.json');
    calendars = await startCalendars(1, headersFile);
    const config = testConfig({
      calendars,
      headersFile,
      overrides: {
        redis: { shards },
        http: { enabled: true, host: '127.0.0.1', port, readsRequireToken: false, maxReplay: 3 * ENTRIES * shards, redisTimeoutMs: REDIS_TIMEOUT_MS },
        log: { level: 'warn' },
      },
    });
    issuer = new Issuer(config, redis.url);
    // the history, before the daemon starts: every shard's stream gets its share
    const all: string[] = [];
    for (const [s, store] of issuer.state.shards.entries()) {
      for (let i = 0; i < ENTRIES; i += 500) {
        const batch = issuer.redis.pipeline();
        for (let j = i; j < i + 500; j++) {
          const key = `history-${s}-${j}`;
          all.push(key);
          batch.xadd(store.keys.events, '*', 'data', JSON.stringify({ type: 'state', key, status: 'pending', at: new Date().toISOString(), detail: PAD }));
        }
        await batch.exec();
      }
    }
    const start = Array(shards).fill('0-0').join(',');

    const keyFile = join(tempDir('key'), 'nostr.key');
    writeKeyFile(keyFile);
    let stderr = '';
    child = spawnDaemon(config, redis.url, keyFile);
    child.stderr?.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString('utf8')).slice(-200_000);
    });
    const base = `http://127.0.0.1:${port}`;
    let lastFetchError = '';
    /** The status of a GET on a fresh connection (a pooled keep-alive one the server just closed would fail for its own reasons); 0 when none came. */
    const status = (path: string): Promise<number> =>
      new Promise((resolve) => {
        const req = http.get(`${base}${path}`, { agent: false, timeout: 5000 }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
        req.on('error', (err) => {
          lastFetchError = err.message;
          resolve(0);
        });
      });
    await waitFor('the daemon serving', async () => (await status('/livez')) === 200, 30_000);
    const alive = async (when: string): Promise<void> => {
      expect(child!.exitCode, `daemon exited ${when}; stderr: ${stderr.slice(-3000)}`).toBeNull();
      expect(child!.signalCode, `daemon killed ${when}`).toBeNull();
      expect(await status('/livez'), `/livez ${when}: ${lastFetchError}`).toBe(200);
    };
    /** A new client with nothing to replay is let in and stays open. */
    const anotherClient = async (when: string): Promise<void> => {
      const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/ws`);
      ws.on('error', () => undefined);
      await within(`another client opening ${when}`, new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('close', (code) => reject(new Error(`closed with ${code} ${when}`)));
      }), 10_000);
      ws.close();
    };
    const why = (closed: Closed): string => `closed ${closed.code} ${JSON.stringify(closed.reason)}; daemon exit ${child!.exitCode ?? child!.signalCode ?? 'none'}; stderr: ${stderr.slice(-1500)}`;
    /**
     * A client resuming from `since` until it has the `want` events left; then an event added to
     * each shard reaches it live (every shard's reader goes on). Returns every key it got; the
     * live ones join the history.
     */
    let added = 0;
    const resume = async (since: string, want: number): Promise<string[]> => {
      const c = wsReplay(base, since);
      await waitFor(`the resumption getting the ${want} events left`, () => c.keys.length >= want || c.ws.readyState === WebSocket.CLOSED, 60_000, 20);
      expect(c.ws.readyState, 'the resumption stays open').toBe(WebSocket.OPEN);
      for (const [s, store] of issuer!.state.shards.entries()) {
        const key = `live-${s}-${added++}`;
        all.push(key);
        await issuer!.redis.xadd(store.keys.events, '*', 'data', JSON.stringify({ type: 'state', key, status: 'pending', at: new Date().toISOString(), detail: '' }));
        await waitFor(`live event ${key}`, () => c.keys.includes(key), 15_000, 20);
      }
      c.ws.close();
      return [...c.keys];
    };

    // 1. WebSocket; Redis refuses XRANGE a few pages in (a command error)
    {
      const c = wsReplay(base, start, 250);
      await within('the replay starting', c.paused, 30_000);
      await admin.acl('SETUSER', 'default', '-xrange');
      c.resume();
      const closed = await within('the WebSocket closing', c.closed, CLOSE_BOUND_MS);
      expect(closed.code, why(closed)).toBe(1011);
      expect(closed.reason).toMatch(/redis/i);
      expect(closed.reason).toMatch(/NOPERM|permission/i);
      expect(Buffer.byteLength(closed.reason)).toBeLessThanOrEqual(123);
      expect(c.keys.length, 'the fault came mid-replay').toBeGreaterThanOrEqual(250);
      expect(c.keys.length, 'the fault came mid-replay').toBeLessThan(all.length);
      await alive('after the replay failed');
      await anotherClient('after the replay failed');
      await admin.acl('SETUSER', 'default', '+xrange');
      const rest = await resume(c.last, all.length - c.keys.length);
      expectWhole([...c.keys, ...rest], all);
    }

    // 2. SSE; the same fault
    {
      const c = sseReplay(base, start, 250);
      await within('the SSE replay starting', c.paused, 30_000);
      await admin.acl('SETUSER', 'default', '-xrange');
      c.resume();
      const ended = await within('the SSE response ending', c.ended, CLOSE_BOUND_MS);
      expect(ended).toMatchObject({ how: 'end', status: 200 });
      expect(c.comments.join('\n')).toMatch(/redis.*NOPERM|NOPERM.*redis/is);
      expect(c.keys.length).toBeLessThan(all.length);
      await alive('after the SSE replay failed');
      await admin.acl('SETUSER', 'default', '+xrange');
      const rest = await resume(c.last, all.length - c.keys.length);
      expectWhole([...c.keys, ...rest], all);
    }

    // 3. WebSocket; Redis stops (SIGTERM: its append-only file written) a few pages in, then starts again
    {
      // a live client (nothing to replay) that stays connected through the outage
      const steady = wsReplay(base, null);
      await within('the live client opening', new Promise((r) => steady.ws.once('open', r)), 10_000);
      const c = wsReplay(base, start, 250);
      await within('the replay starting', c.paused, 30_000);
      await redis.stop();
      c.resume();
      const closed = await within('the WebSocket closing while Redis is down', c.closed, CLOSE_BOUND_MS);
      expect(closed.code, why(closed)).toBe(1011);
      expect(closed.reason).toMatch(/redis/i);
      expect(c.keys.length).toBeLessThan(all.length);
      await alive('with Redis down');
      await anotherClient('with Redis down');
      // an SSE replay asked for while Redis is down ends at once
      const sse = sseReplay(base, start);
      sse.resume();
      expect(await within('the SSE response ending while Redis is down', sse.ended, CLOSE_BOUND_MS)).toMatchObject({ how: 'end', status: 200 });
      expect(sse.comments.join('\n')).toMatch(/redis/i);
      redis = await startEmbeddedRedis({ dir, port: redisPort });
      await waitFor('the daemon ready again', async () => (await status('/readyz')) === 200, 30_000);
      const before = all.length;
      const rest = await resume(c.last, all.length - c.keys.length);
      expectWhole([...c.keys, ...rest], all);
      expect(steady.ws.readyState, 'the live client stayed connected').toBe(WebSocket.OPEN);
      expect(steady.keys, 'what the live client got after the outage').toEqual(all.slice(before));
      steady.ws.close();
      await alive('after Redis came back');
    }
    // 4. WebSocket; Redis frozen (SIGSTOP) a few pages in: closed once a read waited http.redisTimeoutMs
    {
      const c = wsReplay(base, start, 250);
      await within('the replay starting', c.paused, 30_000);
      redis.child.kill('SIGSTOP');
      try {
        c.resume();
        const closed = await within('the WebSocket closing while Redis is frozen', c.closed, CLOSE_BOUND_MS);
        expect(closed.code, why(closed)).toBe(1011);
        expect(closed.reason).toBe(`Redis did not answer within ${REDIS_TIMEOUT_MS} ms (http.redisTimeoutMs)`);
        expect(closed.ms).toBeGreaterThanOrEqual(REDIS_TIMEOUT_MS - 100);
        await alive('with Redis frozen');
      } finally {
        redis.child.kill('SIGCONT');
      }
      await waitFor('the daemon ready again', async () => (await status('/readyz')) === 200, 30_000);
      const rest = await resume(c.last, all.length - c.keys.length);
      expectWhole([...c.keys, ...rest], all);
    }
    // one log line per failed client (five of them), naming the cause without a stack trace
    const closedLines = stderr.split('\n').filter((l) => /client closed/.test(l));
    expect(closedLines, stderr.slice(-3000)).toHaveLength(5);
    for (const line of closedLines) expect(line).toMatch(/"cause":"Redis/);
    for (const line of stderr.split('\n').filter((l) => /event feed/.test(l))) expect(line).not.toMatch(/"stack"/);
  });
});
