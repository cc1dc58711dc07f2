/**
 * Lua scripts: every state change that must be atomic (accept, witness transitions,
 * relay reports, batch cuts) is one script, so a crash between two writes cannot
 * leave a subject half-recorded, and every read that must see one moment of several keys (a
 * list page over the status indexes) is one script too. Each lives in its own file under `lua/`,
 * is loaded (load) by the module of the key family it changes, which defines it on its
 * connection (defineScripts) and runs it (runScript, scriptCommand); it touches only the keys
 * it is given in KEYS, so a Redis Cluster can route it; what each script takes and returns is
 * written at the top of its file.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { RedisClient as Redis } from '../redis/connection.js';

const CANDIDATES = [
  // running from src/adapters/state/
  new URL('./lua/', import.meta.url),
  // running from dist/src/adapters/state/ (the package ships src/adapters/state/lua)
  new URL('../../../../src/adapters/state/lua/', import.meta.url),
];

/** The folder holding the scripts; throws naming every place looked at when none does. */
export function luaDir(candidates: readonly URL[] = CANDIDATES): string {
  for (const url of candidates) {
    const dir = fileURLToPath(url);
    if (existsSync(`${dir}accept.lua`)) return dir;
  }
  throw new Error(`Lua scripts not found; looked in ${candidates.map((u) => fileURLToPath(u)).join(', ')}`);
}

export interface LuaScript {
  /** The file's name without `.lua`. */
  name: string;
  lua: string;
}

export function load(dir: string, name: string, prelude = ''): LuaScript {
  return { name, lua: prelude + readFileSync(`${dir}${name}.lua`, 'utf8') };
}

export const DIR = luaDir();
/** Put in front of the scripts that write the state-change stream: add_events, which keeps it near its length in subject events. */
export const STREAM_LIB = readFileSync(`${DIR}stream-lib.lua`, 'utf8');
/** Put in front of the scripts that write a subject's own history (its hash's `h:<n>` fields): add_history, witness_entry. */
export const HISTORY_LIB = readFileSync(`${DIR}history-lib.lua`, 'utf8');

type ScriptFn = (...args: Array<string | Buffer>) => Promise<unknown>;
type Commander = Redis | ReturnType<Redis['pipeline']>;

function commandName(script: LuaScript): string {
  return `aer1_${script.name.replace(/-/g, '_')}`;
}

/**
 * Defines the scripts as ioredis custom commands (EVALSHA, reloaded after a Redis restart).
 * The number of keys varies per call (accept and cut-batch take lists), so it is the first argument.
 */
export function defineScripts(redis: Redis, scripts: readonly LuaScript[]): void {
  const defined = redis as unknown as Record<string, unknown>;
  for (const script of scripts) {
    const name = commandName(script);
    if (typeof defined[name] !== 'function') redis.defineCommand(name, { lua: script.lua });
  }
}

/** A defined script on a connection or a pipeline created after defineScripts. */
export function scriptCommand(target: Commander, script: LuaScript): ScriptFn {
  const fn = (target as unknown as Record<string, ScriptFn | undefined>)[commandName(script)];
  if (!fn) throw new Error('script not defined on this connection');
  return fn.bind(target);
}

/** Runs a defined script with its keys (all declared, so a Redis Cluster can route it) and arguments. */
export function runScript(redis: Redis, script: LuaScript, keys: readonly string[], args: ReadonlyArray<string | number | Buffer>): Promise<unknown> {
  return scriptCommand(redis, script)(String(keys.length), ...keys, ...args.map((a) => (Buffer.isBuffer(a) ? a : String(a))));
}
