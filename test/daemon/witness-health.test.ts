/**
 * The daemon says when witnesses are down: one "failing" line per endpoint after repeated
 * failures (not one per attempt), one "recovered" line when it answers again, /readyz and
 * /v1/stats name each endpoint's health, and the first log lines say whether the witnesses
 * answered. Real daemon (runDaemon), real dev relay and dev calendar, real Redis.
 */
import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runDaemon, type RunningDaemon } from '../../src/daemon/main.js';
import { createLogger } from '../../src/daemon/logger.js';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import { startDevRelay, type DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import type { Stats } from '../../src/adapters/http/stats.js';
import { Issuer, SHARED_REDIS_URL, deletePrefix, receiptFields, startCalendars, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';

interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

/** A pino logger whose JSON lines land in `lines`. */
function capturingLogger(): { log: ReturnType<typeof createLogger>; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const text of chunk.toString('utf8').split('\n')) if (text.trim() !== '') lines.push(JSON.parse(text) as LogLine);
      done();
    },
  });
  return { log: createLogger('info', sink), lines };
}

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => undefined);
});

async function start(setup: Parameters<typeof testConfig>[0], witnessReprobeMs?: number): Promise<{ running: RunningDaemon; lines: LogLine[]; issuer: Issuer; prefix: string; startMs: number }> {
  const keyFile = join(tempDir('key'), 'nostr.key');
  writeKeyFile(keyFile);
  const config = testConfig({ ...setup, overrides: { redis: { url: SHARED_REDIS_URL }, nostr: { keyFile }, http: { enabled: true, port: 0 }, ...setup.overrides } });
  const { log, lines } = capturingLogger();
  const t0 = Date.now();
  const running = await runDaemon(config, log, witnessReprobeMs === undefined ? {} : { witnessReprobeMs });
  const startMs = Date.now() - t0;
  const issuer = new Issuer(config);
  cleanup.push(() => issuer.close(), () => deletePrefix(issuer.redis, config.redis.prefix), () => running.stop());
  return { running, lines, issuer, prefix: config.redis.prefix, startMs };
}

/** A loopback port nothing listens on (taken, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const about = (lines: LogLine[], url: string, what: RegExp): LogLine[] => lines.filter((l) => l.url === url && what.test(l.msg));

describe('witness health', () => {
  it('a relay refusing 20 attempts gives one "failing" line, then one "recovered" line once it accepts; /readyz and /v1/stats say so', async () => {
    const [relay] = (await startRelays(1)) as [DevRelay];
    cleanup.push(() => relay.close());
    let refused = 0;
    relay.beforeEvent = () => {
      refused++;
      return { accept: false, message: 'error: down for this test' };
    };
    const { running, lines, issuer } = await start({ relays: [relay], overrides: { nostr: { maxAttempts: 100, backoffMs: 50, backoffMaxMs: 100 } } });
    const subject = receiptFields();
    await issuer.enqueue(subject, subject.receipt_uuid);
    const health = () => running.daemon.health.snapshot().find((h) => h.kind === 'relay')!;
    await waitFor('20 refused publish attempts', () => health().consecutiveFailures >= 20 && refused >= 20, 30_000);

    const url = `${relay.url}/`;
    expect(about(lines, url, /is failing/)).toHaveLength(1);
    expect(about(lines, url, /is failing/)[0]!.level).toBe(40);
    expect(about(lines, url, /still failing|recovered/)).toHaveLength(0);
    expect(health()).toMatchObject({ state: 'failing', url, lastError: { message: expect.stringContaining('error: down for this test') } });

    const ready = await fetch(`${running.httpUrl}/readyz`);
    expect(ready.status).toBe(200);
    const body = (await ready.json()) as { status: string; failing: string[]; witnesses: Array<Record<string, unknown>> };
    expect(body.failing).toEqual([`relay ${url}`]);
    expect(body.witnesses[0]).toMatchObject({ kind: 'relay', url, state: 'failing' });
    expect(body.witnesses[0]).not.toHaveProperty('lastError');
    const stats = (await (await fetch(`${running.httpUrl}/v1/stats`)).json()) as Stats;
    expect(stats.health[0]).toMatchObject({ kind: 'relay', url, state: 'failing', lastError: { message: expect.stringContaining('down for this test') } });
    expect(stats.health[0]!.consecutiveFailures).toBeGreaterThanOrEqual(20);
    const gauge = async (name: string): Promise<number | undefined> => {
      const text = await (await fetch(`${running.httpUrl}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`${name}{kind="relay",url="${url}"} `));
      return line === undefined ? undefined : Number(line.split(' ').at(-1));
    };
    expect(await gauge('aer1_witness_endpoint_failing')).toBe(1);
    expect(await gauge('aer1_witness_endpoint_consecutive_failures')).toBeGreaterThanOrEqual(20);

    relay.beforeEvent = undefined;
    await waitFor('the relay recovered', () => health().state === 'ok', 30_000);
    await waitFor('the subject confirmed', async () => (await issuer.count('confirmed')) === 1, 30_000);
    expect(about(lines, url, /is failing/)).toHaveLength(1);
    expect(about(lines, url, /recovered/)).toHaveLength(1);
    expect(health()).toMatchObject({ state: 'ok', consecutiveFailures: 0, lastSuccessAt: expect.stringMatching(/Z$/) });
    const after = (await (await fetch(`${running.httpUrl}/readyz`)).json()) as { failing: string[] };
    expect(after.failing).toEqual([]);
    expect(await gauge('aer1_witness_endpoint_failing')).toBe(0);
    expect(await gauge('aer1_witness_endpoint_consecutive_failures')).toBe(0);
    console.log(`witness-health: ${refused} refused publishes → ${about(lines, url, /is failing|recovered/).length} log lines (1 failing, 1 recovered)`);
  }, 90_000);

  it('a calendar answering 500 to 20 submits gives one "failing" line, then one "recovered" line', async () => {
    const headers = join(tempDir('headers'), 'headers.json');
    const [calendar] = (await startCalendars(1, headers)) as [DevCalendar];
    cleanup.push(() => calendar.close());
    calendar.setMode('error500');
    const { running, lines, issuer } = await start({ calendars: [calendar], headersFile: headers, overrides: { ots: { submitBackoffMs: 50, upgradeInitialMs: 100, upgradeMaxMs: 200 } } });
    const subject = receiptFields();
    await issuer.enqueue(subject, subject.receipt_uuid);
    const health = () => running.daemon.health.snapshot().find((h) => h.kind === 'calendar')!;
    await waitFor('20 failed submits', () => health().consecutiveFailures >= 20, 30_000);
    const hits = (what: RegExp) => lines.filter((l) => typeof l.url === 'string' && (l.url as string).startsWith(calendar.url) && what.test(l.msg));
    expect(hits(/is failing/)).toHaveLength(1);
    expect(health()).toMatchObject({ state: 'failing', lastError: { message: expect.stringMatching(/500/) } });
    const ready = (await (await fetch(`${running.httpUrl}/readyz`)).json()) as { failing: string[] };
    expect(ready.failing).toEqual([`calendar ${health().url}`]);

    calendar.setMode('ok');
    await waitFor('the calendar recovered', () => health().state === 'ok', 30_000);
    expect(hits(/is failing/)).toHaveLength(1);
    expect(hits(/recovered/)).toHaveLength(1);
    expect(hits(/still failing/)).toHaveLength(0);
  }, 90_000);

  it('a relay answering rate-limited: is throttled, not failing: one warning, no flapping; /readyz, /v1/stats and the metrics say throttled', async () => {
    const relays = await Promise.all([startDevRelay(), startDevRelay({ profile: 'damus', profileOptions: { ratePerMinute: 3 } })]);
    cleanup.push(() => Promise.all(relays.map((r) => r.close())));
    const { running, lines, issuer } = await start({ relays, overrides: { nostr: { mode: 'envelope', maxAttempts: 1000, rateLimitBackoffMs: 50, backoffMaxMs: 200 } } });
    const url = `${relays[1]!.url}/`;
    const health = () => running.daemon.health.snapshot().find((h) => h.url === url)!;
    const states = new Set<string>();
    for (const s of Array.from({ length: 8 }, () => receiptFields())) await issuer.enqueue(s, s.receipt_uuid);
    await waitFor('20 rate-limited answers', () => {
      states.add(health().state);
      return health().recent.throttled >= 20;
    }, 30_000, 20);
    expect(states.has('failing')).toBe(false);
    expect(health()).toMatchObject({ state: 'throttled', consecutiveFailures: 0, recent: { failures: 0 } });
    expect(about(lines, url, /is throttling us/)).toHaveLength(1);
    expect(about(lines, url, /is throttling us/)[0]!.level).toBe(40);
    expect(about(lines, url, /failing|recovered/)).toHaveLength(0);

    const ready = (await (await fetch(`${running.httpUrl}/readyz`)).json()) as { failing: string[]; throttled: string[]; witnesses: Array<Record<string, unknown>> };
    expect(ready.failing).toEqual([]);
    expect(ready.throttled).toEqual([`relay ${url}`]);
    expect(ready.witnesses.find((w) => w.url === url)).toMatchObject({ state: 'throttled' });
    const stats = (await (await fetch(`${running.httpUrl}/v1/stats`)).json()) as Stats;
    expect(stats.health.find((h) => h.url === url)).toMatchObject({ state: 'throttled' });
    const text = await (await fetch(`${running.httpUrl}/metrics`)).text();
    expect(text).toContain(`aer1_witness_endpoint_throttled{kind="relay",url="${url}"} 1`);
    expect(text).toContain(`aer1_witness_endpoint_failing{kind="relay",url="${url}"} 0`);
    // the publish counter names the relay the same way, so the two join
    expect(text).toMatch(new RegExp(`aer1_relay_publish_total\\{url="${url.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}",result="rejected:rate-limited"\\} \\d+`));
  }, 90_000);

  it('an idle failing calendar is probed again and turns ok once it answers, with no new work for it; aer1_witness_endpoint_failing goes back to 0', async () => {
    const headers = join(tempDir('headers'), 'headers.json');
    const calendars = await startCalendars(2, headers);
    cleanup.push(() => Promise.all(calendars.map((c) => c.close())));
    const [good, bad] = calendars as [DevCalendar, DevCalendar];
    bad.setMode('error500');
    const { running, lines, issuer } = await start({ calendars, headersFile: headers, overrides: { ots: { minCalendars: 1 } } }, 300);
    const url = `${bad.url}/`;
    const health = () => running.daemon.health.snapshot().find((h) => h.url === url)!;
    // three batches, each held by the good calendar and refused by the bad one: then no more work for it
    for (let i = 0; i < 3; i++) {
      const s = receiptFields();
      await issuer.enqueue(s, s.receipt_uuid);
      await waitFor('the batch held by the good calendar', async () => {
        const r = await issuer.store.subjects.getRecord(s.receipt_uuid);
        return r?.batches.ots && (await issuer.store.batches.batchField('ots', r.batches.ots.id, 'submitted')) === '1';
      }, 30_000, 20);
    }
    await waitFor('the bad calendar failing', () => health().state === 'failing', 10_000, 20);
    const gauge = async (): Promise<string | undefined> => new RegExp(`^aer1_witness_endpoint_failing\\{kind="calendar",url="${url.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}"\\} (\\d+)$`, 'm').exec(await (await fetch(`${running.httpUrl}/metrics`)).text())?.[1];
    expect(await gauge()).toBe('1');
    // probed while still answering 500: still failing, the probe's error shown
    await waitFor('a probe of the bad calendar', () => health().lastError?.message.startsWith('probe: '), 10_000, 20);
    expect(health().state).toBe('failing');
    const sent = bad.stats().digestsReceived;

    bad.setMode('ok');
    await waitFor('the calendar ok again without new work', () => health().state === 'ok', 10_000, 20);
    expect(await gauge()).toBe('0');
    expect(bad.stats().digestsReceived).toBe(sent);
    expect(about(lines, url, /is failing/)).toHaveLength(1);
    expect(about(lines, url, /recovered/)).toHaveLength(1);
  }, 90_000);

  it('the first log lines say which witnesses answered, within a few seconds, before "ready"', async () => {
    const headers = join(tempDir('headers'), 'headers.json');
    const relays = await startRelays(2);
    const [calendar] = (await startCalendars(1, headers)) as [DevCalendar];
    cleanup.push(() => calendar.close(), ...relays.map((r) => () => r.close()));
    const closed = await closedPort();
    const config = { relays, calendars: [calendar], headersFile: headers };
    const { lines, startMs, running } = await start({
      ...config,
      overrides: { nostr: { relays: [...relays.map((r) => r.url), `ws://127.0.0.1:${closed}`] }, ots: { calendars: [calendar.url, `http://127.0.0.1:${closed}`] } },
    });
    const probe = lines.findIndex((l) => l.msg.startsWith('witnesses:'));
    const ready = lines.findIndex((l) => l.msg === 'aer1-anchord ready');
    expect(probe).toBeGreaterThanOrEqual(0);
    expect(probe).toBeLessThan(ready);
    const msg = lines[probe]!.msg;
    expect(msg).toMatch(/^witnesses: 2 relays answered, 1 relay unreachable \(ws:\/\/127\.0\.0\.1:(\d+)\/: [^)]*ECONNREFUSED[^)]*\), 1 calendar answered, 1 calendar unreachable \(http:\/\/127\.0\.0\.1:(\d+)\/: ECONNREFUSED\)$/);
    expect(lines[probe]!.level).toBe(40);
    expect(startMs).toBeLessThan(10_000);
    const states = running.daemon.health.snapshot().map((h) => `${h.kind} ${h.state}`);
    expect(states).toEqual(['relay ok', 'relay ok', 'relay unknown', 'calendar ok', 'calendar unknown']);
    console.log(`witness-health: start took ${startMs} ms; ${msg}`);
  }, 60_000);

  it('a relay and a calendar that take the connection and never answer hold start up for the probe deadline only (3 s)', async () => {
    const sockets: import('node:net').Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    cleanup.push(async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    });
    const headers = join(tempDir('headers'), 'headers.json');
    const [relay] = (await startRelays(1)) as [DevRelay];
    cleanup.push(() => relay.close());
    const { lines, startMs } = await start({
      relays: [relay],
      calendars: [],
      headersFile: headers,
      overrides: { nostr: { relays: [relay.url, `ws://127.0.0.1:${port}`] }, ots: { enabled: true, calendars: [`http://127.0.0.1:${port}`], network: 'regtest' } },
    });
    const msg = lines.find((l) => l.msg.startsWith('witnesses:'))!.msg;
    expect(msg).toMatch(/^witnesses: 1 relay answered, 1 relay unreachable \(ws:\/\/127\.0\.0\.1:\d+\/: [^)]*timed out[^)]*\), 1 calendar unreachable \(http:\/\/127\.0\.0\.1:\d+\/: no answer within 3000 ms\)$/);
    expect(startMs).toBeGreaterThanOrEqual(2900);
    expect(startMs).toBeLessThan(8000);
    console.log(`witness-health: silent endpoints: start took ${startMs} ms; ${msg}`);
  }, 60_000);
});
