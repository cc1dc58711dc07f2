import { describe, expect, it } from 'vitest';
import { decodeReport, encodeReport } from '../../src/adapters/state/relay-reports.js';
import { decodeHistoryEntry, detailRelays, historyOf, packDetail } from '../../src/adapters/state/history-entries.js';
import type { RelayReportRecord } from '../../src/adapters/state/events.js';

describe('relay reports as event hashes keep them', () => {
  const url = 'wss://relay.example';
  const cases: RelayReportRecord[] = [
    { url, status: 'accepted', message: '', at: '2026-12-03T07:32:19.292Z', attempts: 1, final: true },
    { url, status: 'stored', message: 'duplicate: have it | already', at: '2026-12-03T07:32:19.000Z', attempts: 2, final: true, copyId: 'c'.repeat(64), pow: 12 },
    { url, status: 'rejected', message: 'error: slow down', at: '2026-12-03T07:32:19.292Z', attempts: 0, final: false, prefix: 'rate-limited' },
    { url, status: 'failed', message: 'reopened after: x', at: 'not a date', attempts: 0, final: false },
    { url, status: 'pending', message: '', at: '' },
    { url, status: 'something-new', message: 'a\nb', at: '2026-12-03T07:32:19Z', prefix: 'policy', final: true },
  ];
  it.each(cases.map((c) => [c.status, c] as const))('%s reads back exactly as recorded', (_s, r) => {
    const kept = encodeReport(r);
    expect(decodeReport(url, kept)).toEqual(r);
  });
  it('an acceptance fits in a few bytes (a listpack value)', () => {
    expect(encodeReport(cases[0]!).length).toBeLessThanOrEqual(16);
  });
});

describe("a subject's own history entries", () => {
  const created = 1_796_283_131_392;
  it('a witness transition reads back with its time from the created second, full names and its detail', () => {
    expect(decodeHistoryEntry('8|n|p|r|r|ws://127.0.0.1:1: accepted', created)).toEqual({ at: '2026-12-03T07:32:19Z', event: 'witness', witness: 'nostr', from: 'pending', to: 'partial', status: 'partial', detail: 'ws://127.0.0.1:1: accepted' });
    expect(decodeHistoryEntry('0|o|p|c|c|', created)).toEqual({ at: '2026-12-03T07:32:11Z', event: 'witness', witness: 'ots', from: 'pending', to: 'confirmed', status: 'confirmed' });
  });
  it('other entries are their JSON; entries read in their order, whatever the field order', () => {
    const refusal = { at: '2026-12-03T07:32:11Z', event: 'rejected', reason: 'bad document' };
    expect(historyOf({ created: String(created), 'h:1': '3|n|p|f|f|a|b', 'h:0': JSON.stringify(refusal), kind: 'receipt' })).toEqual([refusal, { at: '2026-12-03T07:32:14Z', event: 'witness', witness: 'nostr', from: 'pending', to: 'failed', status: 'failed', detail: 'a|b' }]);
  });
  it('a detail starting with a relay URL keeps the relay as its registry number and reads back as the URL; one starting with ~ reads back as it was', () => {
    const relay = { url: 'wss://relay.example.com:7447/path', n: 12 };
    const packed = packDetail('wss://relay.example.com:7447/path: accepted (ok: saved)', relay);
    expect(packed).toBe('~12: accepted (ok: saved)');
    const hash: Record<string, string> = { created: String(created), 'h:0': `8|n|p|r|r|${packed}`, 'h:1': `9|n|r|c|c|${packDetail('~odd: kept as it was', relay)}`, 'h:2': `9|n|c|c|c|${packDetail('every relay refused', relay)}` };
    const accepted = packDetail('wss://relay.example.com:7447/path: accepted', relay);
    expect(accepted).toBe('~12');
    hash['h:3'] = `9|n|c|c|c|${accepted}`;
    expect(detailRelays(hash)).toEqual([12]);
    expect(historyOf(hash, new Map([[12, relay.url]])).map((e) => e.detail)).toEqual(['wss://relay.example.com:7447/path: accepted (ok: saved)', '~odd: kept as it was', 'every relay refused', 'wss://relay.example.com:7447/path: accepted']);
    // a number the registry does not hold is named, not dropped
    expect(decodeHistoryEntry(`8|n|p|r|r|${packed}`, created).detail).toBe('(relay number 12, not in the registry): accepted (ok: saved)');
  });
});
