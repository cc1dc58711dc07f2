/**
 * A private redis-server's append-only file under faults (test/reliability): SIGKILL, and a
 * host crash that cut the file's tail, repaired with `redis-check-aof --fix` and started
 * again from the same folder on the same port. Never the shared Redis.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/daemon/embedded-redis.js';

/** The append-only file Redis 7 appends to (multi-part AOF: the newest `.incr.aof`). */
export function incrFile(dir: string): string {
  const aofDir = join(dir, 'appendonlydir');
  const incr = readdirSync(aofDir).filter((f) => f.endsWith('.incr.aof')).sort();
  if (incr.length === 0) throw new Error(`no .incr.aof in ${aofDir}`);
  return join(aofDir, incr[incr.length - 1]!);
}

/** SIGKILLs the private redis-server and waits for it to exit. */
export async function killRedis(redis: EmbeddedRedis): Promise<void> {
  if (redis.child.exitCode !== null || redis.child.signalCode !== null) return;
  const exited = new Promise((r) => redis.child.once('exit', r));
  redis.child.kill('SIGKILL');
  await exited;
}

/**
 * Kills Redis, cuts `file` (its append-only file) back to `keepBytes`, lets
 * `redis-check-aof --fix` drop the command the cut left half written, and starts Redis again
 * from its folder on its port: the writes after the cut are lost. Returns the new server and
 * what redis-check-aof said.
 */
export async function cutAofTail(redis: EmbeddedRedis, file: string, keepBytes: number): Promise<{ redis: EmbeddedRedis; fix: string }> {
  await killRedis(redis);
  truncateSync(file, keepBytes);
  const fix = spawnSync('redis-check-aof', ['--fix', file], { input: 'y\n', encoding: 'utf8', timeout: 30_000 });
  if (fix.status !== 0) throw new Error(`redis-check-aof --fix exited ${fix.status}: ${fix.stdout}${fix.stderr}`);
  return { redis: await startEmbeddedRedis({ dir: redis.dir, port: redis.port }), fix: `${fix.stdout}${fix.stderr}`.trim() };
}
