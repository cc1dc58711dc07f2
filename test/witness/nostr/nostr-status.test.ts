/** nostrStatusOf: the Nostr witness status from its relays' reports, quorum reachable or not. */
import { describe, expect, it } from 'vitest';
import { nostrStatusOf } from '../../../src/adapters/nostr/relay-drains.js';
import type { RelayReportRecord } from '../../../src/adapters/state/events.js';

const at = '2026-01-01T00:00:00.000Z';
const ok = (url: string): RelayReportRecord => ({ url, status: 'accepted', message: '', at, final: true });
const refused = (url: string, message: string): RelayReportRecord => ({ url, status: 'rejected', message, at, final: true, prefix: message.split(':')[0]! });
const gaveUp = (url: string): RelayReportRecord => ({ url, status: 'failed', message: 'gave up after 20 attempts: error: x', at, final: true });
const retrying = (url: string): RelayReportRecord => ({ url, status: 'timeout', message: 'no OK', at, final: false });

describe('nostrStatusOf', () => {
  it('confirmed at the quorum, partial below it while it is reachable, pending with no acceptance', () => {
    expect(nostrStatusOf([ok('a'), ok('b')], 3, 2).status).toBe('confirmed');
    expect(nostrStatusOf([ok('a'), refused('b', 'blocked: no')], 3, 2).status).toBe('partial');
    expect(nostrStatusOf([ok('a'), retrying('b')], 3, 3).status).toBe('partial');
    expect(nostrStatusOf([retrying('a')], 3, 2).status).toBe('pending');
    expect(nostrStatusOf([refused('a', 'blocked: no')], 3, 2).status).toBe('pending');
  });

  it('failed with the reason once the relays still able to accept cannot reach the quorum, acceptances or not', () => {
    const one = nostrStatusOf([ok('a'), refused('b', 'blocked: not on the list'), retrying('c')], 3, 3);
    expect(one.status).toBe('failed');
    expect(one.reason).toBe('quorum 3 unreachable: 1 of 3 relays accepted, 1 closed for good: b: rejected (blocked: not on the list)');
    const none = nostrStatusOf([refused('a', 'invalid: bad'), gaveUp('b')], 3, 2);
    expect(none.status).toBe('failed');
    expect(none.reason).toContain('a: rejected (invalid: bad); b: failed (gave up after 20 attempts');
    expect(nostrStatusOf([gaveUp('a'), gaveUp('b'), gaveUp('c')], 3, 1).status).toBe('failed');
  });

  it('progress only grows as relays accept or finish', () => {
    const a = nostrStatusOf([ok('a'), refused('b', 'blocked: no')], 3, 3).progress;
    const b = nostrStatusOf([ok('a'), refused('b', 'blocked: no'), ok('c')], 3, 3).progress;
    expect(b).toBeGreaterThan(a);
  });
});
