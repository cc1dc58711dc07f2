/**
 * The anchor log's sequence in Redis, one per shard under the shard's hash tag: each
 * subject key gets the next index once, and the entries not yet in the log's files wait
 * in a tail list. The files (LogWriter) are the record past `published`; Redis keeps the
 * frontier, the index of key → log index and the tail. Every change is one Lua script, and
 * every key a script touches is declared in KEYS.
 *
 * Keys: `<base>:log:size` (entries sequenced: the next index), `<base>:log:published` (the
 * size the files hold; the tail's head has this index), `<base>:log:idx` (hash: subject
 * key → index), `<base>:log:tail` (list: the entries of indexes published … size-1).
 */
import type { Redis } from 'ioredis';

export class LogKeys {
  constructor(readonly base: string) {}
  get size(): string {
    return `${this.base}:log:size`;
  }
  get published(): string {
    return `${this.base}:log:published`;
  }
  get index(): string {
    return `${this.base}:log:idx`;
  }
  get tail(): string {
    return `${this.base}:log:tail`;
  }
  /** In the order every script takes them. */
  get all(): string[] {
    return [this.size, this.published, this.index, this.tail];
  }
}

// The subject key is the entry's bytes from offset 33 (d is 32 bytes, the kind 1; src/core/log/entry.ts).
const KEY_OF = `local function key_of(entry) return string.sub(entry, 34) end\n`;

/**
 * sequence: KEYS size, published, idx, tail; ARGV the entries. A key already sequenced keeps
 * its index (a key is logged once, also twice in one call); a new one gets the next index
 * and its entry goes on the tail. Returns per entry {index, 1 new | 0 known}.
 */
const SEQUENCE = `${KEY_OF}
local size = tonumber(redis.call('GET', KEYS[1]) or '0')
local out = {}
for i = 1, #ARGV do
  local key = key_of(ARGV[i])
  local known = redis.call('HGET', KEYS[3], key)
  if known then
    out[i] = {tonumber(known), 0}
  else
    redis.call('HSET', KEYS[3], key, size)
    redis.call('RPUSH', KEYS[4], ARGV[i])
    out[i] = {size, 1}
    size = size + 1
  end
end
redis.call('SET', KEYS[1], size)
return out`;

/**
 * settle: KEYS size, published, idx, tail; ARGV[1] the published size the caller read,
 * ARGV[2..] the entries the files hold from that index on (a checkpoint Redis did not
 * hear of: a crash before markPublished, or a Redis that lost writes). The files win: each
 * of their entries keeps its index in idx. The tail is then rebuilt past the files: the
 * entries after them, then those whose index the files took (handed out again after Redis
 * lost writes), each once and only when its key is not in the files, numbered on from the
 * files' end. Returns {published, size, resequenced (tail entries renumbered or dropped),
 * lost (file entries idx did not name at their index: acceptances Redis lost after the files
 * signed them)}, or an error when published moved.
 */
const SETTLE = `${KEY_OF}
local published = tonumber(redis.call('GET', KEYS[2]) or '0')
if published ~= tonumber(ARGV[1]) then return redis.error_reply('settle: published is ' .. published .. ', not ' .. ARGV[1]) end
local n = #ARGV - 1
local inFiles = {}
local lost = 0
for i = 1, n do
  local key = key_of(ARGV[i + 1])
  inFiles[key] = true
  if redis.call('HGET', KEYS[3], key) ~= tostring(published + i - 1) then lost = lost + 1 end
  redis.call('HSET', KEYS[3], key, published + i - 1)
end
local tail = redis.call('LRANGE', KEYS[4], 0, -1)
local order = {}
for i = n + 1, #tail do order[#order + 1] = tail[i] end
for i = 1, math.min(n, #tail) do
  if tail[i] ~= ARGV[i + 1] then order[#order + 1] = tail[i] end
end
redis.call('DEL', KEYS[4])
local size = published + n
local seen, changed = {}, 0
for j, entry in ipairs(order) do
  local key = key_of(entry)
  if inFiles[key] or seen[key] then
    changed = changed + 1
  else
    seen[key] = true
    if j > #tail - n or size ~= published + j + n - 1 then changed = changed + 1 end
    redis.call('HSET', KEYS[3], key, size)
    redis.call('RPUSH', KEYS[4], entry)
    size = size + 1
  end
end
redis.call('SET', KEYS[1], size)
redis.call('SET', KEYS[2], published + n)
return {published + n, size, changed, lost}`;

/** mark: KEYS size, published, idx, tail; ARGV[1] published as read, [2] the new published size. Drops the tail's head up to it. */
const MARK = `local published = tonumber(redis.call('GET', KEYS[2]) or '0')
if published ~= tonumber(ARGV[1]) then return redis.error_reply('mark: published is ' .. published .. ', not ' .. ARGV[1]) end
local upto = tonumber(ARGV[2])
redis.call('LTRIM', KEYS[4], upto - published, -1)
redis.call('SET', KEYS[2], upto)
return upto`;

export interface SequenceState {
  /** Entries sequenced: the next index. */
  readonly size: number;
  /** Entries the files hold, as Redis knows. */
  readonly published: number;
}

type Script = (...args: (string | Buffer | number)[]) => Promise<unknown>;

export class LogSequencer {
  private readonly scripts: Record<'sequence' | 'settle' | 'mark', Script>;

  constructor(private readonly redis: Redis, readonly keys: LogKeys) {
    const commands = redis as unknown as Record<string, Script | undefined>;
    for (const [name, lua] of [['aer1_log_sequence', SEQUENCE], ['aer1_log_settle', SETTLE], ['aer1_log_mark', MARK]] as const) {
      if (typeof commands[name] !== 'function') redis.defineCommand(name, { lua, numberOfKeys: 4 });
    }
    const bound = (name: string): Script => (commands[name] as Script).bind(redis);
    this.scripts = { sequence: bound('aer1_log_sequence'), settle: bound('aer1_log_settle'), mark: bound('aer1_log_mark') };
  }

  /** Sequences encoded entries (src/core/log/entry.ts); per entry its index and whether it is new. */
  async sequence(entries: readonly Buffer[]): Promise<{ index: number; added: boolean }[]> {
    if (entries.length === 0) return [];
    const out = (await this.scripts.sequence(...this.keys.all, ...entries)) as [number, number][];
    return out.map(([index, added]) => ({ index, added: added === 1 }));
  }

  async state(): Promise<SequenceState> {
    const [size, published] = await this.redis.mget(this.keys.size, this.keys.published);
    return { size: Number(size ?? 0), published: Number(published ?? 0) };
  }

  /** The log index of a subject key, or null. */
  async indexOf(key: string): Promise<number | null> {
    const v = await this.redis.hget(this.keys.index, key);
    return v === null ? null : Number(v);
  }

  /** The state and up to `max` tail entries from its head (index `published`), read together in one round trip. */
  async read(max: number): Promise<{ state: SequenceState; tail: Buffer[] }> {
    const replies = await this.redis.multi().mget(this.keys.size, this.keys.published).lrangeBuffer(this.keys.tail, 0, max - 1).exec();
    const failed = replies?.find(([err]) => err);
    if (!replies || failed) throw failed?.[0] ?? new Error('anchor log: the read of the sequence was discarded');
    const [size, published] = (replies[0]![1] as (string | null)[]).map((v) => Number(v ?? 0)) as [number, number];
    return { state: { size, published }, tail: (replies[1]![1] as Buffer[]).slice(0, Math.max(0, size - published)) };
  }

  /** Up to `max` tail entries from the head (index `published`). */
  async tail(max: number): Promise<Buffer[]> {
    return this.redis.lrangeBuffer(this.keys.tail, 0, max - 1);
  }

  /** Tells Redis the files hold `filesEntries` from index `published` on (see SETTLE). */
  async settle(published: number, filesEntries: readonly Buffer[]): Promise<{ published: number; size: number; resequenced: number; lost: number }> {
    const [p, size, resequenced, lost] = (await this.scripts.settle(...this.keys.all, published, ...filesEntries)) as [number, number, number, number];
    return { published: p, size, resequenced, lost };
  }

  /** The files now hold everything below `upto`: the tail's head up to it is dropped. */
  async markPublished(published: number, upto: number): Promise<void> {
    await this.scripts.mark(...this.keys.all, published, upto);
  }
}
