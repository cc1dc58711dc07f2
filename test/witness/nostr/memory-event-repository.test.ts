/**
 * The dev relay's in-memory event repository answers as
 * @nostr-relay/event-repository-sqlite 0.0.40 does (read from its source, and this table
 * was run against that repository before it was removed): duplicates, replaceable
 * events, deletion requests, and each filter field, quirks included. Events of the same
 * second come back by id here; sqlite leaves that order open.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Event, Filter } from '@nostr-relay/common';
import { MemoryEventRepository } from '../../../src/dev/relay/memory-event-repository.js';

const tmp = mkdtempSync(join(tmpdir(), 'aer1-memrepo-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const P1 = '1'.repeat(64);
const P2 = '2'.repeat(64);

/** The repository checks no signature: ids are any 64 hex, `sig` a placeholder. */
function ev(id: string, pubkey: string, kind: number, created_at: number, tags: string[][] = []): Event {
  return { id: id.repeat(64 / id.length), pubkey, created_at, kind, tags, content: `content of ${id}`, sig: 'f'.repeat(128) };
}

const A = ev('a', P1, 3099, 100, [['x', 'd1'], ['i', 'k1']]);
const B = ev('b', P1, 3099, 200, [['x', 'd2'], ['t', 'foo']]);
const C = ev('c', P2, 1, 300, [['x', 'd1'], ['t', 'foo'], ['i', 'k2']]);
const D = ev('d', P2, 3099, 250);
const E = ev('e', P1, 30000, 50, [['d', 'slot'], ['t', 'bar']]);
const ALL = [C, D, B, A, E];

const TABLE: Array<[string, Filter, Event[]]> = [
  ['no constraint: newest first', {}, ALL],
  ['ids', { ids: [A.id, C.id] }, [C, A]],
  ['an empty ids list is no constraint', { ids: [] }, ALL],
  ['an unknown id', { ids: ['9'.repeat(64)] }, []],
  ['authors', { authors: [P1] }, [B, A, E]],
  ['kinds', { kinds: [1] }, [C]],
  ['an empty kinds list is no constraint', { kinds: [] }, ALL],
  ['#x: one value', { '#x': ['d1'] }, [C, A]],
  ['#x: any of several values', { '#x': ['d1', 'd2'] }, [C, B, A]],
  ['#x with kinds', { '#x': ['d1'], kinds: [3099] }, [A]],
  ['#x with authors and since', { '#x': ['d1', 'd2'], authors: [P1], since: 150 }, [B]],
  ['#i', { '#i': ['k2'] }, [C]],
  ['two tag filters: both must match', { '#x': ['d1'], '#t': ['foo'] }, [C]],
  ['three tag filters without ids: "too complex", nothing', { '#x': ['d1'], '#t': ['foo'], '#i': ['k2'] }, []],
  ['three tag filters with ids: the third is ignored', { ids: [C.id], '#x': ['d1'], '#t': ['foo'], '#i': ['nomatch'] }, [C]],
  ['an empty tag list is no constraint', { '#x': [] }, ALL],
  ['a tag value no event has', { '#x': ['zz'] }, []],
  ['&t: every value present', { '&t': ['foo'] }, [C, B]],
  ['&t: two values, no event has both', { '&t': ['foo', 'bar'] }, []],
  ['&t: a repeated value never matches', { '&t': ['foo', 'foo'] }, []],
  ['#t values also under &t are dropped from #t', { '#t': ['foo', 'bar'], '&t': ['foo'] }, []],
  ['since is inclusive', { since: 200 }, [C, D, B]],
  ['until is inclusive', { until: 200 }, [B, A, E]],
  ['since and until', { since: 200, until: 200 }, [B]],
  ['until 0 is no constraint', { until: 0 }, ALL],
  ['limit', { limit: 2 }, [C, D]],
  ['limit 0', { limit: 0 }, []],
  ['limit with #x', { '#x': ['d1', 'd2'], limit: 1 }, [C]],
];

describe('memory event repository: filters as the sqlite repository', () => {
  const repo = new MemoryEventRepository();
  beforeAll(async () => {
    for (const e of [A, B, C, D, E]) expect(await repo.upsert(e)).toEqual({ isDuplicate: false });
  });

  it.each(TABLE)('%s', async (_name, filter, expected) => {
    expect((await repo.find(filter)).map((e) => e.id)).toEqual(expected.map((e) => e.id));
  });

  it('returns events whole, in NIP-01 field order, as fresh objects', () => {
    const [got] = repo.find({ ids: [C.id] });
    expect(got).toEqual(C);
    expect(Object.keys(got!)).toEqual(['id', 'pubkey', 'created_at', 'kind', 'tags', 'content', 'sig']);
    got!.tags[0]![1] = 'mutated';
    expect(repo.find({ ids: [C.id] })[0]).toEqual(C);
  });

  it('lists every event oldest first, then by id', () => {
    expect(repo.all().map((e) => e.id)).toEqual([E, A, B, D, C].map((e) => e.id));
    expect(repo.count()).toBe(5);
  });

  it('orders events of the same second by id (sqlite leaves that order open)', () => {
    const tie = new MemoryEventRepository();
    const [x, y, z] = [ev('9', P1, 3099, 500), ev('3', P2, 3099, 500), ev('6', P1, 3099, 500)];
    for (const e of [x, y, z]) tie.upsert(e);
    expect(tie.find({}).map((e) => e.id)).toEqual([y, z, x].map((e) => e.id));
    expect(tie.all().map((e) => e.id)).toEqual([y, z, x].map((e) => e.id));
  });

  it('gives at most 100 events per filter without a limit, and caps a limit at 1000', () => {
    const big = new MemoryEventRepository();
    for (let i = 0; i < 1100; i++) big.upsert(ev(i.toString(16).padStart(64, '0'), P1, 3099, 1000 + i));
    expect(big.find({})).toHaveLength(100);
    expect(big.find({})[0]!.created_at).toBe(2099);
    expect(big.find({ limit: 5000 })).toHaveLength(1000);
    expect(big.find({ limit: 1100 - 1, since: 2000 })).toHaveLength(100);
  });
});

describe('memory event repository: duplicates, replacements, deletions', () => {
  it('answers the same id twice as a duplicate', () => {
    const repo = new MemoryEventRepository();
    expect(repo.upsert(A)).toEqual({ isDuplicate: false });
    expect(repo.upsert({ ...A })).toEqual({ isDuplicate: true });
    expect(repo.count()).toBe(1);
  });

  it('keeps the newest replaceable event per author and kind; a tie goes to the smaller id', () => {
    const repo = new MemoryEventRepository();
    const old = ev('5', P1, 0, 100);
    const newer = ev('7', P1, 0, 200);
    const sameTimeBigger = ev('8', P1, 0, 200);
    const sameTimeSmaller = ev('6', P1, 0, 200);
    expect(repo.upsert(old).isDuplicate).toBe(false);
    expect(repo.upsert(newer).isDuplicate).toBe(false);
    expect(repo.upsert(ev('4', P1, 0, 150)).isDuplicate).toBe(true); // older than what is held
    expect(repo.upsert(sameTimeBigger).isDuplicate).toBe(true);
    expect(repo.upsert(sameTimeSmaller).isDuplicate).toBe(false);
    expect(repo.upsert(ev('9', P2, 0, 50)).isDuplicate).toBe(false); // another author
    expect(repo.find({ kinds: [0] }).map((e) => e.id)).toEqual([sameTimeSmaller.id, ev('9', P2, 0, 50).id]);
    expect(repo.find({ ids: [old.id, newer.id] })).toEqual([]);
  });

  it('replaces a parameterized replaceable event per d tag, tags and all', () => {
    const repo = new MemoryEventRepository();
    repo.upsert(ev('1', P1, 30000, 100, [['d', 'one'], ['t', 'old']]));
    repo.upsert(ev('2', P1, 30000, 100, [['d', 'two']]));
    const replacement = ev('3', P1, 30000, 200, [['d', 'one'], ['t', 'new']]);
    expect(repo.upsert(replacement).isDuplicate).toBe(false);
    expect(repo.count()).toBe(2);
    expect(repo.find({ '#t': ['old'] })).toEqual([]);
    expect(repo.find({ '#t': ['new'] })).toEqual([replacement]);
    expect(repo.find({ '#d': ['one'] })).toEqual([replacement]);
  });

  it("deletes the author's events named by e ids and a coordinates, nobody else's", async () => {
    const repo = new MemoryEventRepository();
    for (const e of [A, B, C, E]) repo.upsert(e);
    await repo.deleteByDeletionRequest(ev('5', P2, 5, 400, [['e', A.id], ['e', C.id]]));
    expect(repo.find({}).map((e) => e.id)).toEqual([B, A, E].map((e) => e.id)); // A is P1's: kept
    await repo.deleteByDeletionRequest(ev('6', P1, 5, 400, [['e', A.id], ['a', `30000:${P1}:slot`], ['a', `3099:${P1}:`]]));
    expect(repo.find({}).map((e) => e.id)).toEqual([B.id]); // 3099 is not replaceable: B stays
  });
});

describe('memory event repository: the events file', () => {
  it('replays stored events, replacements and deletions; a torn last line is ignored', async () => {
    const file = join(tmp, 'events.jsonl');
    const first = new MemoryEventRepository({ file });
    await first.init();
    for (const e of [A, B, E, ev('5', P1, 0, 100), ev('7', P1, 0, 200)]) first.upsert(e);
    first.upsert(A); // a duplicate writes nothing
    await first.deleteByDeletionRequest(ev('6', P1, 5, 400, [['e', B.id]]));
    await first.destroy();
    appendFileSync(file, '{"event":{"id":"tor');
    const second = new MemoryEventRepository({ file });
    await second.init();
    expect(second.all()).toEqual([E, A, ev('7', P1, 0, 200)]);
  });

  it('refuses a file with a bad line in the middle, naming the line', async () => {
    const file = join(tmp, 'bad.jsonl');
    appendFileSync(file, `${JSON.stringify({ event: A })}\nnot json\n${JSON.stringify({ event: B })}\n`);
    await expect(new MemoryEventRepository({ file }).init()).rejects.toThrow(/bad\.jsonl:2: not a JSON line/);
  });
});
