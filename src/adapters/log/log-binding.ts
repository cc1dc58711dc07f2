/**
 * One anchor log folder, one Redis state (docs/log.md, One folder, one state): the folder's
 * `aer1-log.json` (its origin, redis.prefix, verifier key and a random id) and the state's
 * `{<prefix>}:log:id` in Redis hold the same id, checked at every start before the log is
 * opened. Two states never write one folder, and one state never moves to another folder
 * unnoticed (its log would start over at index 0 and hand out indexes again). A Redis that
 * has no id (new, or flushed) takes the folder's: the log is the durable state.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, linkSync, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import { UsageError } from '../../core/errors/errors.js';
import type { RedisClient } from '../redis/connection.js';
import { CHECKPOINT_FILE, readOptional, syncFolder } from './tile-files.js';

export const BINDING_FILE = 'aer1-log.json';

const bindingSchema = z.strictObject({
  id: z.string().regex(/^[0-9a-f]{32}$/),
  prefix: z.string().min(1),
  origin: z.string().min(1),
  vkey: z.string().min(1),
});

/** What `aer1-log.json` holds. */
type LogBinding = z.output<typeof bindingSchema>;

export interface BindingOptions {
  /** The log's folder (logDir(config)). */
  readonly dir: string;
  /** Each shard's folder, where its checkpoint and tiles are (the folder itself with one shard). */
  readonly shardDirs: readonly string[];
  /** redis.prefix. */
  readonly prefix: string;
  /** The state's key base, `{<prefix>}` (StateKeys.base), whatever its shards. */
  readonly base: string;
  /** The log's origin (each shard's is `<origin>/<i>` with K shards). */
  readonly origin: string;
  /** The log key's verifier key. */
  readonly vkey: string;
}

/** The state's log id: `<base>:log:id` (base `{<prefix>}`), one per state whatever its shards. */
export function logIdKey(base: string): string {
  return `${base}:log:id`;
}

/**
 * Checks (and on a first start makes) the binding of `opts.dir` to the state under
 * `opts.prefix`; a folder and a state that belong elsewhere are refused with a UsageError
 * (code folder_binding) naming the key to change.
 */
export async function bindLogFolder(redis: RedisClient, opts: BindingOptions, log: Logger): Promise<void> {
  const idKey = logIdKey(opts.base);
  const held = await redis.get(idKey);
  let binding = readBinding(opts.dir);
  const logged = hasLog(opts.shardDirs);
  if (binding === null) {
    if (held !== null) throw refusal(`the anchor log folder ${opts.dir} has no ${BINDING_FILE} (${logged ? 'it holds a log bound to no state' : 'it is empty or missing'}), but the state under ${opts.base} writes the log ${held}: set log.dir to that log's folder (a new log there would hand out its indexes again), or redis.prefix to another state`);
    binding = writeBindingOnce(opts.dir, { id: randomBytes(16).toString('hex'), prefix: opts.prefix, origin: opts.origin, vkey: opts.vkey });
  }
  checkSameLog(binding, opts, held);
  if (held === binding.id) return;
  // a Redis without an id takes the folder's; SET NX, so two daemons starting at once agree
  if ((await redis.set(idKey, binding.id, 'NX')) === null) {
    const now = await redis.get(idKey);
    if (now !== binding.id) throw refusal(differentLogs(opts, binding, now ?? '(none)'));
    return;
  }
  if (!logged) {
    log.info({ dir: opts.dir, id: binding.id, key: idKey }, `the anchor log folder ${opts.dir} is bound to the state under ${opts.base} (log ${binding.id})`);
    return;
  }
  log.warn({ dir: opts.dir, id: binding.id, key: idKey }, `anchor log: the state under ${opts.base} had no log id (a new or flushed Redis): it takes the log in ${opts.dir} (log ${binding.id}) as its own`);
}

/** Refuses a binding of another state, origin or key than this daemon's. */
function checkSameLog(binding: LogBinding, opts: BindingOptions, held: string | null): void {
  if (held !== null && held !== binding.id) throw refusal(differentLogs(opts, binding, held));
  if (held === null && binding.prefix !== opts.prefix) {
    throw refusal(`the anchor log folder ${opts.dir} is the log of redis.prefix ${JSON.stringify(binding.prefix)} (${BINDING_FILE}), not of ${JSON.stringify(opts.prefix)}: set log.dir to a folder of this state's own (unset, it is ./var/log/<redis.prefix>), or redis.prefix to ${JSON.stringify(binding.prefix)}`);
  }
  if (binding.origin !== opts.origin) {
    throw refusal(`the anchor log in ${opts.dir} has the origin ${JSON.stringify(binding.origin)} (${BINDING_FILE}), not ${JSON.stringify(opts.origin)}: set log.origin to ${JSON.stringify(binding.origin)}, or log.dir to another folder for a new log`);
  }
  if (binding.vkey !== opts.vkey) {
    throw refusal(`the anchor log in ${opts.dir} is signed by ${binding.vkey} (${BINDING_FILE}), not by the key in log.keyFile (${opts.vkey}): set log.keyFile to that log's key, or log.dir to another folder for a new log`);
  }
}

function differentLogs(opts: BindingOptions, binding: LogBinding, held: string): string {
  return `the anchor log folder ${opts.dir} is the log ${binding.id} of redis.prefix ${JSON.stringify(binding.prefix)} (${BINDING_FILE}), but the state under ${opts.base} writes the log ${held}: set log.dir to this state's log folder, or redis.prefix to the state of this folder`;
}

function refusal(message: string): UsageError {
  return new UsageError(message, 'folder_binding');
}

/** Whether any shard's folder holds a log (a checkpoint or tiles). */
function hasLog(shardDirs: readonly string[]): boolean {
  return shardDirs.some((d) => existsSync(join(d, CHECKPOINT_FILE)) || existsSync(join(d, 'tile')));
}

/** The folder's binding, or null when it has none; one that does not parse is refused. */
function readBinding(dir: string): LogBinding | null {
  let bytes: Buffer | null;
  try {
    bytes = readOptional(dir, BINDING_FILE);
  } catch (err) {
    throw refusal(`cannot read ${join(dir, BINDING_FILE)} (log.dir): ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  if (bytes === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const result = bindingSchema.safeParse(parsed);
  if (!result.success) throw refusal(`${join(dir, BINDING_FILE)} (log.dir) is not an anchor log binding {"id", "prefix", "origin", "vkey"}: restore it, or set log.dir to another folder`);
  return result.data;
}

/** Writes the binding unless the folder has one already (a daemon starting at the same time); the one in the folder. */
function writeBindingOnce(dir: string, binding: LogBinding): LogBinding {
  const path = join(dir, BINDING_FILE);
  const cannot = (err: unknown): UsageError => refusal(`cannot write ${path} (log.dir): ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw cannot(err);
  }
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const fd = openSync(tmp, 'wx', 0o644);
    try {
      writeSync(fd, `${JSON.stringify(binding, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    // a link never replaces a file: of two daemons starting at once, one binding wins
    linkSync(tmp, path);
    syncFolder(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw cannot(err);
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      // never made
    }
  }
  return readBinding(dir)!;
}
