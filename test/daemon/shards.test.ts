/**
 * redis.shards = 3 (docs/architecture.md "Shards"), on the shared Redis and on a local
 * 3-master Redis Cluster: subjects taken over HTTP (routed by the API to their shard's queue)
 * and put on the usual intake queue by an issuer (routed by the daemon) each land in the
 * shard shardOf(key, 3) names and in no other; a conflicting root is refused whichever route
 * it takes; the API, the list (its cursor across shards) and the stats show the shards as
 * one; each shard's live feed and webhook deliverer carry its subjects, the merged feed all of
 * them on one connection; every subject
 * confirms with lost=0 duplicates=0. On the cluster the three shards sit
 * on three masters, and the built daemon SIGKILLed mid-run and restarted loses and
 * duplicates nothing; losing the master of shard 2 turns /readyz red.
 */
import { writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardOf } from '../../src/core/shard/shard.js';
import { enqueueAnchorRouted, shardTargets } from '../../src/adapters/queue/routed-producer.js';
import type { RedisTarget } from '../../src/adapters/redis/connection.js';
import { Issuer, REPO_ROOT, SHARED_REDIS_URL, receiptFields, tempDir, waitFor } from '../helpers/harness.js';
import { startLocalCluster, type LocalCluster } from '../helpers/redis-cluster.js';
import { startStack } from '../http/fixture.js';
import { openSse } from '../http/clients.js';
import { startShardWebhooks } from '../../src/adapters/webhooks/webhooks.js';
import { startReceiver } from '../webhooks/receiver.js';
import { audit, report } from '../reliability/audit.js';
import { killMidRunOnCluster } from '../reliability/cluster-kill.js';

const K = 3;

async function threeShardsAsOne(redisUrl: RedisTarget, overrides: Record<string, unknown>): Promise<void> {
  const N = 30;
  const receiver = await startReceiver(() => 200);
  const s = await startStack({ relays: 1, redisUrl, overrides: { ...overrides, redis: { ...(overrides.redis as object), shards: K }, webhooks: [{ url: receiver.url, secret: 'sharded-hook-secret-0123456789' }] } });
  // one deliverer per shard, as aer1-anchord starts them
  const hooks = await startShardWebhooks({ daemon: s.daemon, log: s.log, tuning: { backoffMs: 50, backoffMaxMs: 200, blockMs: 200 } });
  const issuer = new Issuer(s.config, redisUrl);
  try {
    expect(s.daemon.engines.length).toBe(K);
    const viaHttp = Array.from({ length: N }, () => receiptFields());
    const viaQueue = Array.from({ length: N }, () => receiptFields());
    const keys = [...viaHttp, ...viaQueue].map((x) => x.receipt_uuid);
    // the live feed per shard: ?shard=i, each shard's changes on its own stream
    const feeds = await Promise.all([0, 1, 2].map((i) => openSse(`${s.http.url}/v1/events?shard=${i}`)));
    expect(feeds.map((f) => f.status)).toEqual([200, 200, 200]);
    expect((await s.get('/v1/events?shard=3')).status).toBe(400);
    // and every shard's on one connection, without ?shard=
    const merged = await openSse(`${s.http.url}/v1/events`);
    const res = await s.post('/v1/anchors', { subjects: viaHttp }, { auth: true });
    expect(res.status).toBe(202);
    // the usual intake queue ({prefix}), single jobs and one bulk job: the daemon routes them
    for (const x of viaQueue.slice(0, 10)) await issuer.enqueue(x, x.receipt_uuid);
    await issuer.queue.add('anchor', { subjects: viaQueue.slice(10) }, { jobId: 'bulk-sharded', removeOnComplete: true, removeOnFail: true });
    await s.confirm(keys, 90_000);
    await Promise.all(feeds.map((f, i) => {
      const mine = keys.filter((k) => shardOf(k, K) === i);
      return f.until((m) => {
        const changes = m.map((e) => JSON.parse(e.data) as { key?: string; status?: string });
        const done = new Set(changes.filter((c) => c.status === 'confirmed').map((c) => c.key));
        // each shard's feed carries its own subjects, and only those
        return mine.every((k) => done.has(k)) && changes.every((c) => c.key === undefined || shardOf(c.key, K) === i);
      }, 20_000).finally(() => f.close());
    }));

    const all = await merged.until((m) => {
      const done = new Set(m.map((e) => JSON.parse(e.data) as { key?: string; status?: string }).filter((c) => c.status === 'confirmed').map((c) => c.key));
      return keys.every((k) => done.has(k));
    }, 20_000).finally(() => merged.close());
    // each id is every shard's position: the message's shard's part is its event on that shard's stream, the others stay
    let before: string[] | null = null;
    for (const e of all) {
      const parts = e.id!.split(',');
      expect(parts).toHaveLength(K);
      const shard = shardOf((JSON.parse(e.data) as { key: string }).key, K);
      if (before) for (let i = 0; i < K; i++) if (i !== shard) expect(parts[i]).toBe(before[i]);
      before = parts;
    }

    await waitFor('every subject confirmed to the webhook, from all shards', () => {
      const done = new Set(receiver.delivered().map((r) => JSON.parse(r.body) as { key?: string; status?: string }).filter((c) => c.status === 'confirmed').map((c) => c.key));
      return keys.every((k) => done.has(k));
    }, 20_000);
    // every delivery's X-Aer1-Event-Id names its shard, so the ids are unique across shards
    // (each shard's stream has its own ids: two shards changing in one millisecond share one)
    const ids = receiver.delivered().map((r) => r.eventId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const r of receiver.delivered()) {
      const key = (JSON.parse(r.body) as { key: string }).key;
      expect(r.eventId.startsWith(`${shardOf(key, K)}/`), r.eventId).toBe(true);
    }
    // GET /v1/webhooks counts the deliveries of every shard: all the receiver got, from the K deliverers
    const overview = await waitFor('the delivery log caught up', async () => {
      const o = (await (await s.get('/v1/webhooks?limit=5', { auth: true })).json()) as { hooks: Array<{ delivered: number; recent: unknown[] }> };
      return o.hooks[0]!.delivered === receiver.delivered().length ? o : null;
    }, 10_000);
    expect(overview.hooks[0]!.recent).toHaveLength(5);

    // each subject in its own shard and in no other
    for (const k of keys) {
      const home = shardOf(k, K);
      for (let i = 0; i < K; i++) expect(await s.daemon.engines[i]!.store.subjects.getRecord(k) !== null, `${k} in shard ${i}`).toBe(i === home);
    }
    expect(new Set(keys.map((k) => shardOf(k, K))).size).toBe(K);

    // a conflicting root for a known subject is refused on either route: by the API, and by the daemon from the usual queue
    const known = viaQueue[0]!;
    const other = { ...known, output_sha256: 'ff'.repeat(32) };
    expect((await s.post('/v1/anchors', other, { auth: true })).status).toBe(409);
    const routed = shardTargets(issuer.redis, { prefix: s.config.redis.prefix, queueName: s.config.queue.name, shards: K });
    try {
      await expect(enqueueAnchorRouted(routed, other, { maxJobBytes: 1_000_000, maxSteps: 1000, maxEntries: 1000 })).rejects.toThrow(/conflict/);
      expect((await enqueueAnchorRouted(routed, viaHttp[0], { maxJobBytes: 1_000_000, maxSteps: 1000, maxEntries: 1000 })).result).toBe('known');
    } finally {
      await Promise.all(routed.map((t) => t.queue.close()));
    }
    await issuer.enqueue(other, known.receipt_uuid);
    await waitFor('the routed conflict refused', async () => (await issuer.queue.getJob(known.receipt_uuid)) === undefined, 20_000);
    expect((await s.daemon.state.getRecord(known.receipt_uuid))!.status).toBe('confirmed');

    // the API shows the shards as one
    const one = await s.get(`/v1/anchors/${encodeURIComponent(keys[N + 1]!)}`);
    expect(((await one.json()) as { status: string }).status).toBe('confirmed');
    expect((await s.get(`/v1/anchors/${encodeURIComponent(keys[2]!)}/proof`)).status).toBe(200);
    const stats = (await (await s.get('/v1/stats', { auth: true })).json()) as { subjects: { total: number; byStatus: Record<string, number> } };
    expect(stats.subjects.byStatus.confirmed).toBe(2 * N);
    const metrics = await (await s.get('/metrics', { auth: true })).text();
    expect(metrics).toMatch(/aer1_anchor_subjects\{witness="all",status="confirmed"\} 60/);
    const listed: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 20; page++) {
      const body = (await (await s.get(`/v1/anchors?status=confirmed&limit=7${cursor ? `&cursor=${cursor}` : ''}`, { auth: true })).json()) as { items: Array<{ key: string; acceptedAt: string }>; next: string | null };
      listed.push(...body.items.map((i) => i.key));
      cursor = body.next;
      if (!cursor) break;
    }
    expect(listed.length).toBe(2 * N);
    expect(new Set(listed)).toEqual(new Set(keys));
    expect((await s.get('/readyz')).status).toBe(200);
    // the status page learns how many live streams to follow
    expect(((await (await s.get('/v1/info', { auth: true })).json()) as { shards: number }).shards).toBe(K);

    // the CLI reads a key from its shard, with the same redis.shards in its config
    const inShard2 = keys.find((k) => shardOf(k, K) === 2)!;
    const dir = tempDir('cli');
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify(s.config));
    const cli = join(REPO_ROOT, 'dist/src/cli/aer1-anchor.js');
    const env = { PATH: process.env.PATH ?? '', HOME: dir, ...(typeof redisUrl === 'string' ? { REDIS_URL: redisUrl } : {}) };
    const status = spawnSync(process.execPath, [cli, 'status', inShard2, '--config', file], { encoding: 'utf8', env, timeout: 30_000 });
    expect(status.status, status.stderr).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^${inShard2}: confirmed`));
    const proof = spawnSync(process.execPath, [cli, 'proof', inShard2, '--config', file], { encoding: 'utf8', env, timeout: 30_000 });
    expect(proof.status, proof.stderr).toBe(0);
    expect(JSON.parse(proof.stdout)).toMatchObject({ status: 'confirmed' });

    const result = await audit('shards-3', issuer, keys, []);
    expect(result.lost).toBe(0);
    expect(result.duplicates).toBe(0);
    report(result, { shards: K });
  } finally {
    await hooks.stop();
    await issuer.close();
    await s.close();
    await receiver.close();
  }
}

describe('redis.shards = 3 on one Redis', () => {
  it('subjects land in their shard by either route; the API, list and stats show one state; all confirmed, lost=0 duplicates=0', { timeout: 150_000 }, async () => {
    await threeShardsAsOne(SHARED_REDIS_URL, {});
  });
});

describe('redis.shards = 3 on a 3-master Redis Cluster', () => {
  let cluster: LocalCluster;
  beforeAll(async () => {
    cluster = await startLocalCluster();
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('the same, with the three shards on three masters', { timeout: 150_000 }, async () => {
    await threeShardsAsOne({ cluster: cluster.urls }, { redis: { cluster: cluster.urls } });
    const owners = await Promise.all([0, 1, 2].map((i) => cluster.ownerOf(`{aer1:${i}}:counts`)));
    expect(new Set(owners).size).toBe(3);
  });

  describe('the built daemon SIGKILLed mid-run', () => {
    it('resumes after the kill: all confirmed, none lost, none stored twice', { timeout: 240_000 }, async () => {
      const { result, acceptedAtKill } = await killMidRunOnCluster({
        urls: cluster.urls,
        n: 600,
        relays: 1,
        shards: K,
        name: 'daemon-sigkill-cluster-3-shards',
        check: async (issuer, keys) => {
          for (const k of keys) expect(await issuer.state.shards[shardOf(k, K)]!.subjects.getRecord(k), k).not.toBeNull();
        },
      });
      expect(result.lost).toBe(0);
      expect(result.duplicates).toBe(0);
      report(result, { acceptedAtKill, shards: K });
    });
  });

  // last: it kills a master, and the cluster stays down for the rest of the file
  it('/readyz turns 503 when the master of a shard other than shard 0 is lost', { timeout: 90_000 }, async () => {
    const s = await startStack({ redisUrl: { cluster: cluster.urls }, overrides: { redis: { cluster: cluster.urls, shards: K } }, http: { redisTimeoutMs: 1000 } });
    try {
      expect((await s.get('/readyz')).status).toBe(200);
      const first = await cluster.ownerOf(s.daemon.engines[0]!.store.keys.probe);
      const other = await cluster.ownerOf(s.daemon.engines[2]!.store.keys.probe);
      expect(other).not.toBe(first);
      await cluster.kill(other);
      const res = await waitFor('/readyz red', async () => {
        const r = await s.get('/readyz');
        return r.status === 503 ? r : null;
      }, 30_000, 200);
      expect(JSON.stringify(await res.json())).toMatch(/"code":"not_ready","message":"redis: /);
    } finally {
      // BullMQ's workers wait for the lost master to close: bounded here
      await Promise.race([s.close(), new Promise((r) => setTimeout(r, 20_000).unref())]);
    }
  });
});
