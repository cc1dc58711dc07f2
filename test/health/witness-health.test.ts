/**
 * WitnessHealth on its own, with a clock the test moves: when it turns an endpoint failing,
 * how often it reminds, what it keeps of an error, and that it never logs per attempt.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/daemon/logger.js';
import { MAX_ERROR_CHARS, WitnessHealth } from '../../src/adapters/health/witness-health.js';

function setup(): { health: WitnessHealth; lines: Array<{ level: number; msg: string }>; clock: { ms: number } } {
  const lines: Array<{ level: number; msg: string }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _e, done) {
      for (const t of chunk.toString('utf8').split('\n')) if (t.trim()) lines.push(JSON.parse(t) as { level: number; msg: string });
      done();
    },
  });
  const clock = { ms: Date.parse('2026-01-01T00:00:00Z') };
  return { health: new WitnessHealth(createLogger('info', sink), { now: () => clock.ms }), lines, clock };
}

describe('WitnessHealth', () => {
  it('starts unknown, turns failing on the 3rd failure in a row, reminds every 5 minutes at most, and logs one line on recovery', () => {
    const { health, lines, clock } = setup();
    health.register('relay', 'wss://relay.example');
    expect(health.snapshot()).toEqual([{ kind: 'relay', url: 'wss://relay.example/', state: 'unknown', lastSuccessAt: null, lastError: null, consecutiveFailures: 0, recent: { windowSeconds: 900, attempts: 0, failures: 0, throttled: 0 } }]);
    health.failure('relay', 'wss://relay.example', 'timeout: no OK');
    health.failure('relay', 'wss://relay.example', 'timeout: no OK');
    expect(health.snapshot()[0]!.state).toBe('unknown');
    expect(lines).toHaveLength(0);
    for (let i = 0; i < 100; i++) {
      health.failure('relay', 'wss://relay.example', 'timeout: no OK');
      clock.ms += 1000;
    }
    // 100 s of failures: the transition line only
    expect(lines.map((l) => l.msg)).toEqual(['relay wss://relay.example/ is failing: 3 attempts in a row failed (last: timeout: no OK)']);
    clock.ms += 300_000;
    health.failure('relay', 'wss://relay.example', 'timeout: no OK');
    health.failure('relay', 'wss://relay.example', 'timeout: no OK');
    expect(lines).toHaveLength(2);
    expect(lines[1]!.msg).toMatch(/still failing: 103 attempts in a row/);
    health.success('relay', 'wss://relay.example');
    health.success('relay', 'wss://relay.example');
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatchObject({ level: 30, msg: 'relay wss://relay.example/ recovered after 104 failed attempts' });
    expect(health.snapshot()[0]).toMatchObject({ state: 'ok', consecutiveFailures: 0, lastSuccessAt: expect.stringMatching(/Z$/) });
    // a single failure after recovery does not turn it failing again
    health.failure('relay', 'wss://relay.example', 'error: x');
    expect(health.snapshot()[0]).toMatchObject({ state: 'ok', consecutiveFailures: 1, lastError: { message: 'error: x' } });
  });

  it('counts attempts and failures over the last 15 minutes: the error rate, which forgets older minutes', () => {
    const { health, clock } = setup();
    const url = 'wss://relay.example';
    for (let i = 0; i < 6; i++) health.failure('relay', url, 'timeout: no OK');
    for (let i = 0; i < 2; i++) health.success('relay', url);
    expect(health.snapshot()[0]!.recent).toEqual({ windowSeconds: 900, attempts: 8, failures: 6, throttled: 0 });
    clock.ms += 10 * 60_000;
    health.success('relay', url);
    expect(health.snapshot()[0]!.recent).toEqual({ windowSeconds: 900, attempts: 9, failures: 6, throttled: 0 });
    // 16 minutes after the first burst: only the success of minute 10 is left
    clock.ms += 6 * 60_000;
    expect(health.snapshot()[0]!.recent).toEqual({ windowSeconds: 900, attempts: 1, failures: 0, throttled: 0 });
    clock.ms += 15 * 60_000;
    expect(health.snapshot()[0]!.recent).toEqual({ windowSeconds: 900, attempts: 0, failures: 0, throttled: 0 });
  });

  it('keeps one bounded line of the last error, with the URL shown without credentials or query', () => {
    const { health, lines } = setup();
    const url = 'https://user:hunter22@cal.example/path?sig=s3cr3t-token';
    for (let i = 0; i < 3; i++) health.failure('calendar', url, `calendar ${url}: http_status 500\n${'x'.repeat(1000)}`);
    const rec = health.snapshot()[0]!;
    expect(rec.url).toBe('https://cal.example/path');
    expect(rec.lastError!.message.length).toBeLessThanOrEqual(MAX_ERROR_CHARS);
    expect(rec.lastError!.message).toMatch(/^calendar https:\/\/cal\.example\/path: http_status 500 x+…$/);
    expect(JSON.stringify(lines)).not.toMatch(/hunter22|s3cr3t/);
    expect(JSON.stringify(health.snapshot())).not.toMatch(/hunter22|s3cr3t/);
  });

  it('a relay answering rate-limited: between acceptances is throttled, not failing: one warning in 2 minutes, a reminder after 5, one line when it ends', () => {
    const { health, lines, clock } = setup();
    const url = 'wss://relay.damus.example';
    // the two minutes: about 6 accepted a minute, the rest rate-limited (82 % of answers)
    for (let s = 0; s < 120; s += 2) {
      if (s % 10 === 0) health.success('relay', url);
      else health.throttled('relay', url, 'rate-limited: slow down');
      clock.ms += 2000;
    }
    const rec = health.snapshot()[0]!;
    expect(rec).toMatchObject({ state: 'throttled', consecutiveFailures: 0, lastError: null });
    // rate-limited answers are not errors: 0 % errors, 48 of the 60 attempts rate-limited
    expect(rec.recent).toEqual({ windowSeconds: 900, attempts: 60, failures: 0, throttled: 48 });
    expect(health.failing()).toEqual([]);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([[40, 'relay wss://relay.damus.example/ is throttling us (rate-limited: slow down): publishes wait and are retried, nothing is dropped']]);
    // still throttling 5 minutes after the warning: one reminder
    for (let s = 0; s < 240; s += 2) {
      health.throttled('relay', url, 'rate-limited: slow down');
      clock.ms += 2000;
    }
    expect(lines.map((l) => l.msg).slice(1)).toEqual([expect.stringMatching(/^relay wss:\/\/relay\.damus\.example\/ is still throttling: \d+ rate-limited answers in the last 15 minutes$/)]);
    // 5 minutes without a rate-limited answer: ok, with one line
    health.success('relay', url);
    clock.ms += 300_000;
    expect(health.snapshot()[0]!.state).toBe('ok');
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatchObject({ level: 30, msg: 'relay wss://relay.damus.example/ no longer throttling: no rate-limited answer for 300 s' });
  });

  it('a failing endpoint nothing was sent to for a while is due for a probe; an answer turns it ok, no answer keeps it failing', () => {
    const { health, lines, clock } = setup();
    const url = 'http://cal.example:14789';
    for (let i = 0; i < 3; i++) health.failure('calendar', url, `calendar ${url}: network: POST ${url}/digest failed`);
    expect(health.snapshot()[0]!.state).toBe('failing');
    // the URL shown once, in one form: no doubled slash where the configured URL had none
    expect(health.snapshot()[0]!.lastError!.message).toBe('calendar http://cal.example:14789: network: POST http://cal.example:14789/digest failed');
    expect(health.idleFailing(60_000)).toEqual([]);
    clock.ms += 60_000;
    expect(health.idleFailing(60_000)).toEqual([{ kind: 'calendar', url }]);
    health.probed('calendar', url, false, 'ECONNREFUSED');
    expect(health.snapshot()[0]).toMatchObject({ state: 'failing', lastError: { message: 'probe: ECONNREFUSED' } });
    expect(health.idleFailing(60_000)).toEqual([]);
    clock.ms += 60_000;
    health.probed('calendar', url, true);
    expect(health.snapshot()[0]).toMatchObject({ state: 'ok', consecutiveFailures: 0 });
    expect(lines.map((l) => l.msg)).toEqual(['calendar http://cal.example:14789/ is failing: 3 attempts in a row failed (last: calendar http://cal.example:14789: network: POST http://cal.example:14789/digest failed)', 'calendar http://cal.example:14789/ recovered after 3 failed attempts']);
  });
});
