/**
 * Pointed (redis.url) at a node of a Redis Cluster that does not serve the slot of `{aer1}`,
 * the daemon used to report ready and loop on MOVED for ever. Now it refuses to start (exit
 * 2, one line naming the cluster and pointing at redis.cluster), the client commands refuse
 * the same way, and `/readyz`'s Redis check says so. A real 3-master cluster, started here on free loopback
 * ports in a temp folder and stopped afterwards.
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Readiness } from '../../src/adapters/http/readiness.js';
import { checkSlotServed } from '../../src/adapters/redis/cluster-redirect.js';
import { StateKeys } from '../../src/adapters/state/keys.js';
import { REPO_ROOT, startDaemon, testConfig } from '../helpers/harness.js';
import { startLocalCluster, type LocalCluster } from '../helpers/redis-cluster.js';
import { UsageError } from '../../src/core/errors/errors.js';

const PREFIX = 'aer1';
let cluster: LocalCluster;
let dir = '';
let foreign = 0; // a node that does not serve {aer1}'s slot
let owner = 0;

beforeAll(async () => {
  cluster = await startLocalCluster();
  dir = cluster.dir;
  owner = await cluster.ownerOf(new StateKeys(PREFIX).probe);
  foreign = cluster.ports.find((p) => p !== owner)!;
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

const CLUSTER_LINE = /^Redis at 127\.0\.0\.1:\d+ is a Redis Cluster node that does not serve slot \d+ of the key prefix \{aer1\} \(it answered MOVED to 127\.0\.0\.1:\d+\); for a Redis Cluster set redis\.cluster \(AER1_REDIS_CLUSTER\) to its nodes instead of redis\.url \(REDIS_URL\), which is for one standalone Redis or primary$/;

describe('a Redis Cluster node that does not serve {aer1}', () => {
  it('is told apart from the node that does', async () => {
    const a = new Redis({ host: '127.0.0.1', port: foreign });
    const b = new Redis({ host: '127.0.0.1', port: owner });
    try {
      expect(await checkSlotServed(a, new StateKeys(PREFIX).probe)).toMatchObject({ kind: 'MOVED', target: `127.0.0.1:${owner}` });
      expect(await checkSlotServed(b, new StateKeys(PREFIX).probe)).toBeNull();
    } finally {
      a.disconnect();
      b.disconnect();
    }
  });

  it('aer1-anchord refuses to start: exit 2 and one line saying what to do', { timeout: 30_000 }, async () => {
    const config = testConfig({ prefix: PREFIX, overrides: { ots: { enabled: true } } });
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ ...config, redis: { ...config.redis, url: `redis://127.0.0.1:${foreign}` } }));
    const child = spawn(process.execPath, [join(REPO_ROOT, 'bin/aer1-anchord.js'), '--config', file], { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((res) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.once('exit', (c) => {
        clearTimeout(timer);
        res(c);
      });
    });
    expect(code).toBe(2);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.replace(/^aer1-anchord: /, '')).toMatch(CLUSTER_LINE);
    expect(lines[0]).toContain(`MOVED to 127.0.0.1:${owner}`);
  });

  it('Daemon.start throws the same UsageError in process', { timeout: 30_000 }, async () => {
    const config = testConfig({ prefix: PREFIX, overrides: { ots: { enabled: true } } });
    const err = await startDaemon(config, `redis://127.0.0.1:${foreign}`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as Error).message).toMatch(CLUSTER_LINE);
  });

  it('aer1-anchor enqueue refuses the same way (exit 2)', { timeout: 30_000 }, () => {
    const file = join(dir, 'r.json');
    writeFileSync(file, JSON.stringify({ subject: 'receipt', receipt_uuid: 'c-1', output_sha256: 'ab'.repeat(32) }));
    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'dist/src/cli/aer1-anchor.js'), 'enqueue', file, '--redis-url', `redis://127.0.0.1:${foreign}`], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: dir }, cwd: dir, timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr.trim().replace(/^aer1-anchor: /, '')).toMatch(CLUSTER_LINE);
  });

  it("/readyz's Redis check names the cluster node", async () => {
    const redis = new Redis({ host: '127.0.0.1', port: foreign });
    try {
      const problem = await new Readiness(redis, new StateKeys(PREFIX).probe, 1000).redisProblem();
      expect(problem?.replace(/^redis: /, '')).toMatch(CLUSTER_LINE);
    } finally {
      redis.disconnect();
    }
  });
});
