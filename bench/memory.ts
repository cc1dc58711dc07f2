/**
 * Where a run's Redis memory goes: every key in the private Redis, classified by its name
 * into a kind (subject hash, history, BullMQ job hashes, a queue's event stream, …), and
 * `MEMORY USAGE` summed per kind — all keys of a kind, or a uniform sample scaled by the
 * kind's key count when it has many. A snapshot before the run and one after give the bytes
 * each kind added; what no key holds (Redis's own tables, client buffers, the script cache)
 * is the `used_memory` delta less the keys', shown as its own line.
 *
 * Kinds are found from the state layout's own key names (StateKeys, looked up by method name
 * so a layout that drops or renames one still runs; a key's first two segments name its kind
 * where the layout has a key there, as `nostr:kept` for relay upkeep's walk, else its first)
 * and from the daemon's BullMQ queue names; a key of no known kind is counted under
 * "other (<segment>:)", never an error. Any hash tag (`{bench}`, `{bench:3}` for shard 3) is
 * accepted, so sharded layouts are summed per kind across shards.
 */
import type { Redis } from 'ioredis';
import { StateKeys } from '../src/adapters/state/keys.js';

/** Kinds by the StateKeys member that names them (a member a layout does not have is skipped). */
const STATE_KINDS: ReadonlyArray<[member: string, kind: string]> = [
  ['subject', 'subject hash'],
  ['envelope', 'envelope'],
  ['history', 'history'],
  ['event', 'nostr events'],
  ['batch', 'batches'],
  ['batchKeys', 'batches'],
  ['batchHistory', 'batch histories'],
  ['batchSeq', 'batches'],
  ['openBatches', 'batches'],
  ['emptiedBatches', 'batches'],
  ['batchesWithWork', 'batches'],
  ['byStatus', 'indexes'],
  ['byWitness', 'indexes'],
  ['counts', 'indexes'],
  ['events', 'state-change stream'],
  ['inbox', 'inboxes'],
  ['nostrRecent', 'nostr recent'],
  ['nostrKept', 'relay upkeep walk'],
  ['nostrKeptChunks', 'relay upkeep walk'],
  ['timeline', 'timeline'],
  ['meta', 'daemon bookkeeping'],
  ['schema', 'daemon bookkeeping'],
  ['reconcile', 'daemon bookkeeping'],
  ['probe', 'daemon bookkeeping'],
];

/** BullMQ's per-queue keys other than job hashes (`<queue>:<suffix>`). */
const BULL_STRUCTURES = new Set(['wait', 'paused', 'active', 'completed', 'failed', 'delayed', 'prioritized', 'waiting-children', 'meta', 'id', 'stalled', 'stalled-check', 'marker', 'pc', 'limiter', 'repeat', 'metrics', 'de', 'deduplication', 'schedulers']);

export const BULL_EVENTS = 'BullMQ event streams';
export const BULL_JOBS = 'BullMQ job hashes';
export const BULL_QUEUES = 'BullMQ queue lists and sets';
export const OUTSIDE_KEYS = "outside keys (Redis's tables)";
/** The clients' buffers (INFO mem_clients_normal): the daemon's connections and what is in flight on them, not held per subject. */
export const CLIENT_BUFFERS = 'client buffers (in flight, not per subject)';
/** The scripts Redis cached over the run (INFO used_memory_scripts): BullMQ's and ours, paid once per Redis, not per subject. */
export const SCRIPT_CACHE = 'Lua script cache (once per Redis)';

/** Which of the daemon's queues, from what follows the base queue name (names.ts: `-ots`, `-nostr`, `-wh-<hook>`, …). */
function queueRole(tail: string): string {
  if (tail === '') return 'intake';
  const m = /^-([a-z]+)/.exec(tail);
  const word = m?.[1] ?? tail.slice(0, 16);
  return word === 'relay' ? 'relays' : word === 'wh' ? 'webhooks' : word;
}

export interface KeyClassifier {
  (name: string): string;
}

/**
 * A classifier for keys under `prefix` (any hash tag starting with it) and BullMQ queues
 * whose names start with `queueBase` (the intake queue and the daemon's own queues).
 */
export function keyClassifier(prefix: string, queueBase: string): KeyClassifier {
  const k = new StateKeys(prefix) as unknown as Record<string, unknown>;
  const base = `{${prefix}}:`;
  // a kind by the key name's first two segments (`nostr:recent`, `nostr:kept`), else by its first (`s`, `ev`, `nostr`)
  const byTwo = new Map<string, string>();
  const bySegment = new Map<string, string>();
  for (const [member, kind] of STATE_KINDS) {
    let name: unknown;
    try {
      const v = k[member];
      name = typeof v === 'function' ? (v as (...a: string[]) => unknown).call(k, 'nostr', 'x') : v;
    } catch {
      continue;
    }
    if (typeof name !== 'string' || !name.startsWith(base)) continue;
    const segments = name.slice(base.length).split(':');
    const segment = segments[0]!;
    if (segment && !bySegment.has(segment)) bySegment.set(segment, kind);
    if (segment && segments.length > 1 && !byTwo.has(`${segment}:${segments[1]}`)) byTwo.set(`${segment}:${segments[1]}`, kind);
  }
  const tag = /^\{([^}]*)\}:(.*)$/s;
  return (name: string): string => {
    const m = tag.exec(name);
    if (!m || !(m[1] === prefix || m[1]!.startsWith(`${prefix}:`))) return 'other (outside the prefix)';
    const rest = m[2]!;
    const colon = rest.indexOf(':');
    const segment = colon < 0 ? rest : rest.slice(0, colon);
    if (segment.startsWith(queueBase)) {
      const suffix = colon < 0 ? '' : rest.slice(colon + 1);
      const first = suffix.split(':')[0]!;
      const role = queueRole(segment.slice(queueBase.length));
      if (first === 'events') return `${BULL_EVENTS} (${role})`;
      if (first === '' || BULL_STRUCTURES.has(first)) return BULL_QUEUES;
      return `${BULL_JOBS} (${role})`; // `<queue>:<job id>` and its `:lock` / `:logs`
    }
    const two = colon < 0 ? undefined : byTwo.get(rest.split(':', 2).join(':'));
    return two ?? bySegment.get(segment) ?? `other (${segment.slice(0, 24)}:)`;
  };
}

export interface KindUsage {
  keys: number;
  bytes: number;
}

/** A kind with more keys than this is sampled (uniformly, this many) and scaled by its key count. */
const SAMPLE = 2000;

/**
 * Every key of the Redis, classified, and MEMORY USAGE per kind. Bounded: at most
 * `maxKeys` keys are listed (the rest of the key space is then left out, and `truncated` says so).
 */
export async function keySpaceUsage(redis: Redis, classify: KeyClassifier, maxKeys = 5_000_000): Promise<{ kinds: Map<string, KindUsage>; truncated: boolean }> {
  const byKind = new Map<string, string[]>();
  let cursor = '0';
  let listed = 0;
  let truncated = false;
  for (let i = 0; i < 100_000; i++) {
    const [next, batch] = await redis.scan(cursor, 'COUNT', 2000);
    for (const name of batch) {
      const kind = classify(name);
      let list = byKind.get(kind);
      if (!list) byKind.set(kind, (list = []));
      list.push(name);
    }
    listed += batch.length;
    cursor = next;
    if (cursor === '0') break;
    if (listed >= maxKeys) {
      truncated = true;
      break;
    }
  }
  const kinds = new Map<string, KindUsage>();
  for (const [kind, names] of byKind) {
    const step = names.length > SAMPLE ? names.length / SAMPLE : 1;
    const sample: string[] = [];
    for (let x = 0; x < names.length && sample.length < SAMPLE; x += step) sample.push(names[Math.floor(x)]!);
    let bytes = 0;
    for (let i = 0; i < sample.length; i += 500) {
      const pipe = redis.pipeline();
      for (const n of sample.slice(i, i + 500)) pipe.call('MEMORY', 'USAGE', n, 'SAMPLES', '0');
      for (const [, v] of (await pipe.exec()) ?? []) bytes += Number(v ?? 0); // a key gone meanwhile counts 0
    }
    kinds.set(kind, { keys: names.length, bytes: Math.round((bytes * names.length) / Math.max(1, sample.length)) });
  }
  return { kinds, truncated };
}

/** `INFO memory` and `INFO cpu` figures the bench reads. */
export async function redisInfo(redis: Redis): Promise<{ usedMemory: number; cpuMs: number }> {
  const text = await redis.info();
  const num = (field: string): number => {
    const m = new RegExp(`^${field}:([0-9.]+)`, 'm').exec(text);
    if (!m) throw new Error(`INFO has no ${field} line`);
    return Number(m[1]);
  };
  return { usedMemory: num('used_memory'), cpuMs: (num('used_cpu_sys') + num('used_cpu_user')) * 1000 };
}

/** Parts of INFO memory's used_memory, read together (bytes). */
export interface MemoryFigures {
  used: number;
  /** The clients' buffers, what is in flight on the connections: CLIENT LIST's tot-mem summed (INFO mem_clients_normal where CLIENT LIST has no tot-mem). */
  clients: number;
  /** used_memory_scripts: the cached scripts' bodies, once per Redis (0 when not reported). */
  scripts: number;
  /** used less clients and scripts: what the state holds, with Redis's own tables. */
  held: number;
  /**
   * MEMORY USAGE of the capped streams (every `…:events` key: the state-change stream, kept
   * near 100,000 subject events, and BullMQ's event streams, kept near 10,000 events each)
   * and the change stream's tally: part of `held` that stops growing once the caps are
   * reached, so it is not a cost each subject keeps.
   */
  capped: number;
}

/** Keys of the capped streams (bounded SCAN): `…:events` and the change stream's tally `…:events:n`. */
async function cappedKeys(redis: Redis): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  for (let i = 0; i < 1000; i++) {
    const [next, keys] = await redis.scan(cursor, 'MATCH', '*:events*', 'COUNT', 1000);
    for (const k of keys) if (k.endsWith(':events') || k.endsWith(':events:n')) out.push(k);
    cursor = next;
    if (cursor === '0') break;
  }
  return out;
}

/**
 * One read, pipelined: the capped streams' MEMORY USAGE, CLIENT LIST and INFO memory. The
 * clients' buffers are CLIENT LIST's `tot-mem` summed, computed as the list is made: INFO's
 * mem_clients_normal is a figure clientsCron refreshes a few clients at a time, so right after
 * a burst it still counts query buffers since shrunk, or misses ones since grown (seen as
 * ±150 B a subject between runs of the same code at N = 1,000).
 */
export async function memoryFigures(redis: Redis): Promise<MemoryFigures> {
  const keys = await cappedKeys(redis);
  const pipe = redis.pipeline();
  for (const k of keys) pipe.memory('USAGE', k, 'SAMPLES', '0');
  pipe.client('LIST');
  pipe.info('memory');
  const res = (await pipe.exec()) ?? [];
  for (const [err] of res) if (err) throw err;
  const info = String(res[res.length - 1]![1]);
  const list = String(res[res.length - 2]![1]);
  const capped = res.slice(0, keys.length).reduce((a, [, v]) => a + Number(v ?? 0), 0);
  const field = (name: string): number | null => {
    const m = new RegExp(`^${name}:(\\d+)`, 'm').exec(info);
    return m ? Number(m[1]) : null;
  };
  const used = field('used_memory');
  if (used === null) throw new Error('INFO memory has no used_memory line');
  const perClient = [...list.matchAll(/ tot-mem=(\d+)/g)].map((m) => Number(m[1]));
  const clients = perClient.length > 0 ? perClient.reduce((a, b) => a + b, 0) : (field('mem_clients_normal') ?? 0);
  const scripts = field('used_memory_scripts') ?? 0;
  return { used, clients, scripts, held: used - clients - scripts, capped };
}

export interface MemoryBreakdown {
  /** Bytes per subject each kind of key added (rounded), largest first, then OUTSIDE_KEYS: what no key holds. */
  perSubject: Record<string, number>;
  /** Keys per subject each kind added (two decimals). */
  keysPerSubject: Record<string, number>;
  /** Entries in the state-change stream (one per state script call since the `stream` change; capped by the daemon at about 100,000 subject events), null when the layout has none. */
  streamEntries: number | null;
  /** History entries per subject (sampled), null when histories are not lists. */
  historyEntries: number | null;
  /** The key listing stopped at its bound. */
  truncated: boolean;
}

/**
 * Bytes (and keys) per subject each kind added between `before` and `after`; `deltaBytes` is
 * the used_memory delta, `scriptBytes` and `clientBytes` the parts of it the script cache and
 * the clients' buffers took (rows of their own).
 */
export function breakdownOf(before: Map<string, KindUsage>, after: Map<string, KindUsage>, subjects: number, deltaBytes: number, scriptBytes = 0, clientBytes = 0): Pick<MemoryBreakdown, 'perSubject' | 'keysPerSubject'> {
  const rows: Array<[string, number, number]> = [];
  let inKeys = 0;
  for (const [kind, u] of after) {
    const b = before.get(kind) ?? { keys: 0, bytes: 0 };
    const bytes = u.bytes - b.bytes;
    inKeys += bytes;
    rows.push([kind, bytes, u.keys - b.keys]);
  }
  for (const [kind, b] of before) if (!after.has(kind)) rows.push([kind, -b.bytes, -b.keys]);
  rows.sort((a, b) => b[1] - a[1]);
  if (scriptBytes !== 0) rows.push([SCRIPT_CACHE, scriptBytes, 0]);
  if (clientBytes !== 0) rows.push([CLIENT_BUFFERS, clientBytes, 0]);
  rows.push([OUTSIDE_KEYS, deltaBytes - inKeys - scriptBytes - clientBytes, 0]);
  const perSubject: Record<string, number> = {};
  const keysPerSubject: Record<string, number> = {};
  for (const [kind, bytes, keys] of rows) {
    const per = Math.round(bytes / Math.max(1, subjects));
    if (per === 0 && kind !== OUTSIDE_KEYS) continue;
    perSubject[kind] = per;
    keysPerSubject[kind] = Math.round((keys / Math.max(1, subjects)) * 100) / 100;
  }
  return { perSubject, keysPerSubject };
}
