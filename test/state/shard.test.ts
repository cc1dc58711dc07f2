/**
 * The shard function issuers and the daemon share: first 4 bytes of SHA-256(UTF-8 key),
 * big-endian, mod K. The expected values below were computed with Python's hashlib
 * (`int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], 'big') % k`), not with this code.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { groupByShard, MAX_SHARDS, shardOf } from '../../src/core/shard/shard.js';
import { StateKeys } from '../../src/adapters/state/keys.js';

const VECTORS: Array<[string, number, number]> = [
  // key, shard of 3, shard of 7
  ['receipt-0001', 2, 6],
  ['a', 2, 2],
  ['job-42', 1, 2],
  ['ü-key', 0, 4],
  ['550e8400-e29b-41d4-a716-446655440000', 2, 0],
];

describe('shardOf', () => {
  it('matches the values an independent implementation computes', () => {
    for (const [key, of3, of7] of VECTORS) {
      expect(shardOf(key, 3), key).toBe(of3);
      expect(shardOf(key, 7), key).toBe(of7);
      expect(shardOf(key, 1), key).toBe(0);
    }
  });

  it('spreads random keys over every shard', () => {
    const counts = [0, 0, 0];
    for (let i = 0; i < 3000; i++) counts[shardOf(randomUUID(), 3)]!++;
    // 1,000 expected each; a shard with under 800 would mean the function is skewed
    for (const c of counts) expect(c).toBeGreaterThan(800);
  });

  it('refuses a shard count out of range, naming it', () => {
    expect(() => shardOf('k', 0)).toThrow(/^shards must be an integer 1–64, got 0$/);
    expect(() => shardOf('k', MAX_SHARDS + 1)).toThrow(/got 65/);
    expect(() => shardOf('k', 1.5)).toThrow(/got 1\.5/);
  });
});

describe('StateKeys.forShard', () => {
  it('keeps the one-shard layout exactly and gives K shards K hash tags', () => {
    expect(StateKeys.forShard('aer1', 0, 1).base).toBe('{aer1}');
    expect(StateKeys.forShard('aer1', 0, 1).counts).toBe(new StateKeys('aer1').counts);
    expect([0, 1, 2].map((i) => StateKeys.forShard('aer1', i, 3).base)).toEqual(['{aer1:0}', '{aer1:1}', '{aer1:2}']);
    expect(StateKeys.forShard('aer1', 2, 3).subject('k')).toBe('{aer1:2}:s:k');
    expect(() => StateKeys.forShard('aer1', 3, 3)).toThrow(/^shard must be an integer 0–2, got 3$/);
  });
});

describe('groupByShard', () => {
  it('groups positions by the shard of each key, in the order given; an item without a key goes to shard 0', () => {
    const keys = Array.from({ length: 40 }, () => randomUUID());
    const items: Array<string | null> = [...keys, null];
    const groups = groupByShard(items, 3, (k) => k);
    const seen = [...groups.values()].flat().sort((a, b) => a - b);
    expect(seen).toEqual(items.map((_x, i) => i));
    for (const [shard, positions] of groups) {
      expect([...positions].sort((a, b) => a - b)).toEqual(positions);
      for (const i of positions) expect(items[i] === null ? 0 : shardOf(items[i]!, 3)).toBe(shard);
    }
    expect(groups.get(0)).toContain(40);
  });
});
