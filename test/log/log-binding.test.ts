/**
 * The anchor log is on by default, in ./var/log/<prefix> with its key in
 * ./var/log-<prefix>.key, and its folder is bound to one Redis state (aer1-log.json and
 * `{prefix}:log:id` hold one id): the built `aer1-anchord`, started as a newcomer starts
 * it (no log settings, in a folder of its own), makes both on a first start, finds them on
 * a restart, takes the folder's log after Redis lost its keys, and refuses, exit 2 in one
 * line naming the key to change, every start that would mix two logs — stopping the
 * embedded redis-server it started. Real Redis, real files, real processes.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connectRedis } from '../../src/adapters/redis/connection.js';
import { BINDING_FILE, logIdKey } from '../../src/adapters/log/log-binding.js';
import { StateKeys } from '../../src/adapters/state/keys.js';
import { redisServersIn } from '../../src/daemon/embedded-redis.js';
import { logLines, quietConfigFile, ready, refusedLine, type Run, startAnchord, stop } from '../helpers/anchord-run.js';
import { deletePrefix, Issuer, receiptFields, SHARED_REDIS_URL, tempDir, testConfig, uniquePrefix, waitFor } from '../helpers/harness.js';

const redis = connectRedis(SHARED_REDIS_URL);
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await redis.quit();
});

const idKey = (prefix: string): string => logIdKey(new StateKeys(prefix).base);

function start(cwd: string, config: string, env: Record<string, string> = {}): Run {
  return startAnchord(cwd, config, env, cleanups);
}

/** Runs a start that must be refused: exit 2 and its one plain line. */
function refused(cwd: string, config: string, env: Record<string, string> = {}): Promise<string> {
  return refusedLine(start(cwd, config, env));
}

function checkpointSize(dir: string): number {
  const path = join(dir, 'checkpoint');
  return existsSync(path) ? Number(readFileSync(path, 'utf8').split('\n')[1]) : -1;
}

async function anchorOne(prefix: string): Promise<void> {
  const issuer = new Issuer(testConfig({ prefix, overrides: { ots: { enabled: true } } }));
  try {
    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
  } finally {
    await issuer.close();
  }
}

describe('the anchor log by default, its folder bound to one state', () => {
  const home = tempDir('log-binding');
  const prefix = uniquePrefix('bind');
  const config = quietConfigFile(home, { url: SHARED_REDIS_URL, prefix });
  const folder = join(home, 'var', 'log', prefix);
  const binding = (): { id: string; prefix: string; origin: string; vkey: string } => JSON.parse(readFileSync(join(folder, BINDING_FILE), 'utf8'));
  let vkey = '';

  it('a first start with no log settings makes ./var/log/<prefix>, its key and the id, and says where they are', async () => {
    const run = start(home, config);
    await ready(run);
    const key = join(home, 'var', `log-${prefix}.key`);
    expect(statSync(key).mode & 0o777).toBe(0o600);
    const b = binding();
    expect(b).toMatchObject({ prefix, origin: `aer1-anchor/${prefix}` });
    expect(await redis.get(idKey(prefix))).toBe(b.id);
    vkey = b.vkey;
    const line = logLines(run).find((l) => l.msg.includes('verifier key'));
    expect(line?.msg).toBe(`anchor log: aer1-anchor/${prefix} in ./var/log/${prefix}, verifier key ${vkey}`);
    // the log takes what is accepted
    await anchorOne(prefix);
    await waitFor('a checkpoint of size 1', () => checkpointSize(folder) === 1, 30_000, 50);
    await stop(run);
  });

  it('a restart finds the folder and the state bound: the same key and id, no warning', async () => {
    const before = binding();
    const run = start(home, config);
    await ready(run);
    expect(logLines(run).filter((l) => l.level >= 40 && l.msg.startsWith('anchor log'))).toEqual([]);
    expect(binding()).toEqual(before);
    expect(await redis.get(idKey(prefix))).toBe(before.id);
    expect(logLines(run).find((l) => l.msg.includes('verifier key'))?.msg).toContain(`verifier key ${vkey}`);
    await stop(run);
  });

  it('Redis without an id (flushed) takes the folder\'s log with one warning, and the log goes on from its size', async () => {
    await deletePrefix(redis, `{${prefix}}`);
    const run = start(home, config);
    await ready(run);
    const warnings = logLines(run).filter((l) => l.level === 40 && l.msg.includes('had no log id'));
    expect(warnings.map((w) => w.msg)).toEqual([`anchor log: the state under {${prefix}} had no log id (a new or flushed Redis): it takes the log in ./var/log/${prefix} (log ${binding().id}) as its own`]);
    expect(await redis.get(idKey(prefix))).toBe(binding().id);
    await anchorOne(prefix);
    // the next subject is entry 1: the folder's entry 0 is not handed out again
    await waitFor('a checkpoint of size 2', () => checkpointSize(folder) === 2, 30_000, 50);
    await stop(run);
  });

  it('refuses a Redis id other than the folder\'s, naming log.dir and redis.prefix', async () => {
    const own = binding().id;
    const other = randomBytes(16).toString('hex');
    await redis.set(idKey(prefix), other);
    try {
      const line = await refused(home, config);
      expect(line).toBe(`aer1-anchord: the anchor log folder ./var/log/${prefix} is the log ${own} of redis.prefix "${prefix}" (aer1-log.json), but the state under {${prefix}} writes the log ${other}: set log.dir to this state's log folder, or redis.prefix to the state of this folder`);
    } finally {
      await redis.set(idKey(prefix), own);
    }
  });

  it('refuses a state with a log id and a log folder that is empty or missing, naming log.dir, and makes no folder', async () => {
    const missing = join(tempDir('log-binding-missing'), 'log');
    const line = await refused(home, config, { AER1_ANCHOR_LOG_DIR: missing });
    expect(line).toBe(`aer1-anchord: the anchor log folder ${missing} has no aer1-log.json (it is empty or missing), but the state under {${prefix}} writes the log ${binding().id}: set log.dir to that log's folder (a new log there would hand out its indexes again), or redis.prefix to another state`);
    expect(existsSync(missing)).toBe(false);
  });

  it('refuses another key than the log\'s, naming log.keyFile', async () => {
    const keyFile = join(tempDir('log-binding-key'), 'other.key');
    const line = await refused(home, config, { AER1_ANCHOR_LOG_KEY_FILE: keyFile });
    expect(line).toMatch(new RegExp(`^aer1-anchord: the anchor log in \\./var/log/${prefix} is signed by ${vkey.replace(/[+/]/g, '\\$&')} \\(aer1-log\\.json\\), not by the key in log\\.keyFile \\(\\S+\\): set log\\.keyFile to that log's key, or log\\.dir to another folder for a new log$`));
  });

  it('refuses another state pointed at this folder, naming redis.prefix and log.dir, and writes no id for it', async () => {
    const stranger = uniquePrefix('bind-other');
    const line = await refused(home, quietConfigFile(tempDir('log-binding-other'), { url: SHARED_REDIS_URL, prefix: stranger }), { AER1_ANCHOR_LOG_DIR: folder });
    expect(line).toBe(`aer1-anchord: the anchor log folder ${folder} is the log of redis.prefix "${prefix}" (aer1-log.json), not of "${stranger}": set log.dir to a folder of this state's own (unset, it is ./var/log/<redis.prefix>), or redis.prefix to "${prefix}"`);
    expect(await redis.get(idKey(stranger))).toBeNull();
  });
});

describe('a refused start with the embedded redis-server', () => {
  it('stops the redis-server it started before it exits', async () => {
    const home = tempDir('log-binding-embedded');
    const dataDir = join(home, 'var', 'redis');
    cleanups.push(async () => {
      // a failed run may leave the folder's server running: stop it by its pid
      for (const pid of redisServersIn(dataDir)) process.kill(pid, 'SIGTERM');
      await waitFor('the folder has no redis-server', () => redisServersIn(dataDir).length === 0, 10_000, 50);
    });
    const config = quietConfigFile(home, { url: null, prefix: uniquePrefix('bind-embedded'), localDefault: false, embedded: true, embeddedDir: dataDir });
    const first = start(home, config);
    await ready(first);
    await stop(first);
    expect(redisServersIn(dataDir)).toEqual([]);
    // the state (in the embedded server's append-only file) has its log id; this folder is not its log
    const line = await refused(home, config, { AER1_ANCHOR_LOG_DIR: join(home, 'elsewhere') });
    expect(line).toMatch(/^aer1-anchord: the anchor log folder .*elsewhere has no aer1-log\.json \(it is empty or missing\).*set log\.dir/);
    expect(redisServersIn(dataDir)).toEqual([]);
  });
});
