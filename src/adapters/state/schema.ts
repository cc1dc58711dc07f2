/**
 * The layout of the state under one prefix (`{prefix}:schema`): opened at start, and any
 * layout other than STATE_SCHEMA refused with one line saying what was found and what to do.
 */
import type { RedisClient as Redis } from '../redis/connection.js';
import type { StateKeys } from './keys.js';
import { UsageError } from '../../core/errors/errors.js';

/**
 * The layout of the state this store reads and writes, kept in `{prefix}:schema`
 * (docs/architecture.md, "Where state lives"). Any other layout is refused at start
 * (openSchema): there are no readers of older layouts.
 */
export const STATE_SCHEMA = 10;

/** How a store found the layout under its prefix (openSchema): `fresh` (no `:schema`), `current`; `recorded`: the schema key was written. */
export type SchemaOpening = { found: 'fresh' | 'current'; recorded: boolean };

/**
 * Checks the layout under the prefix before anything is written. Layout STATE_SCHEMA: opened
 * as it is. No `:schema`: marked STATE_SCHEMA when `write` (the daemon; a client writes
 * nothing), unless keys only the development layout before `:schema` wrote are there
 * (StateKeys.unnumberedLayoutKeys). That, or another `:schema` value, is refused with a
 * UsageError (`redis_schema`, exit 2) whose one line says what was found and what to do.
 * Cost: one GET and one EXISTS round trip, whatever the state's size.
 */
export async function openSchema(redis: Redis, k: StateKeys, opts: { write: boolean }): Promise<SchemaOpening> {
  const raw = await redis.get(k.schema);
  if (raw === String(STATE_SCHEMA)) return { found: 'current', recorded: false };
  if (raw !== null) throw schemaRefusal(k, raw);
  const found = await unnumberedLayoutKey(redis, k);
  if (found !== null) {
    throw new UsageError(`the state under redis.prefix ${k.base} has no layout version (${k.schema} is missing, ${found} is there): it was written by a development release before layouts were numbered, which this release (layout ${STATE_SCHEMA}) does not read; ${startAfresh(k)}`, 'redis_schema');
  }
  if (!opts.write) return { found: 'fresh', recorded: false };
  // NX: a second daemon opening at the same moment finds the key written and judges it
  if ((await redis.set(k.schema, String(STATE_SCHEMA), 'NX')) === 'OK') return { found: 'fresh', recorded: true };
  return openSchema(redis, k, { write: false });
}

/** The first of StateKeys.unnumberedLayoutKeys that exists, or null (one pipeline of EXISTS). */
async function unnumberedLayoutKey(redis: Redis, k: StateKeys): Promise<string | null> {
  const candidates = k.unnumberedLayoutKeys;
  const pipe = redis.pipeline();
  for (const key of candidates) pipe.exists(key);
  const res = (await pipe.exec()) ?? [];
  for (let i = 0; i < candidates.length; i++) {
    const [err, n] = res[i] ?? [null, 0];
    if (err) throw err;
    if (Number(n) > 0) return candidates[i]!;
  }
  return null;
}

/** What an operator does with a prefix holding a layout this release does not read. */
function startAfresh(k: StateKeys): string {
  return `to start afresh, delete the keys under ${k.base} (redis-cli --scan --pattern '${k.base}*' | xargs redis-cli unlink) or set redis.prefix to a new prefix`;
}

/** The one line refusing a `:schema` value other than STATE_SCHEMA: older, newer, or not ours. */
function schemaRefusal(k: StateKeys, raw: string): UsageError {
  const n = /^[0-9]{1,6}$/.test(raw) ? Number(raw) : NaN;
  const what = !Number.isInteger(n)
    ? `has an unknown layout version ${JSON.stringify(raw.slice(0, 40))} in ${k.schema} (this release reads layout ${STATE_SCHEMA}): it was not written by aer1-anchor; set redis.prefix to a prefix of its own`
    : n > STATE_SCHEMA
      ? `is layout ${n} (${k.schema}), newer than this release (layout ${STATE_SCHEMA}): run the release that wrote it, or set redis.prefix to a prefix of its own`
      : `is layout ${n} (${k.schema}), written by an earlier development release; this release reads only layout ${STATE_SCHEMA} and does not convert older ones; ${startAfresh(k)}`;
  return new UsageError(`the state under redis.prefix ${k.base} ${what}`, 'redis_schema');
}
