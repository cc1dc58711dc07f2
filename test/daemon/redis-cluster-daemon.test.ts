/**
 * The daemon on a real local Redis Cluster (three masters, no replicas, free loopback
 * ports, a temp folder; stopped afterwards) through `redis.cluster`: subjects taken over
 * HTTP anchor to confirmed through a dev relay and a dev calendar, their proofs verify
 * offline, `/readyz` and the API answer as on one Redis, and every key of the prefix (state
 * and BullMQ alike) lives on the one master serving its hash tag; the live feed and a
 * webhook see every confirmation. The built daemon, SIGKILLed mid-run on the cluster and
 * restarted, loses and duplicates nothing. Last, the master of the prefix's slot is killed
 * and `/readyz` turns red, quickly, saying Redis is unreachable.
 */
import { writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { HeadersFileSource } from '../../src/adapters/bitcoin/index.js';
import { verifyAnchor } from '../../src/core/verify/pipeline.js';
import { connectRedis, isCluster } from '../../src/adapters/redis/connection.js';
import { StateKeys } from '../../src/adapters/state/keys.js';
import { shardOf } from '../../src/core/shard/shard.js';
import { REPO_ROOT, receiptFields, tempDir, waitFor } from '../helpers/harness.js';
import { askNode, startLocalCluster, type LocalCluster } from '../helpers/redis-cluster.js';
import { startStack } from '../http/fixture.js';
import { openSse } from '../http/clients.js';
import { startWebhooks } from '../../src/adapters/webhooks/webhooks.js';
import { startReceiver } from '../webhooks/receiver.js';
import { report, anchorEventCount } from '../reliability/audit.js';
import { killMidRunOnCluster } from '../reliability/cluster-kill.js';

let cluster: LocalCluster;

beforeAll(async () => {
  cluster = await startLocalCluster();
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

/** Keys per master, by port. */
async function keysPerNode(): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const p of cluster.ports) out.set(p, Number(await askNode(p, 'DBSIZE')));
  return out;
}

describe('aer1-anchord on redis.cluster', () => {
  it('anchors subjects to confirmed; proofs verify offline; /readyz, stats and the subject view answer; every key on the master of {prefix}', { timeout: 120_000 }, async () => {
    const N = 30;
    const receiver = await startReceiver(() => 200);
    const s = await startStack({ relays: 2, redisUrl: { cluster: cluster.urls }, overrides: { redis: { cluster: cluster.urls }, webhooks: [{ url: receiver.url, secret: 'cluster-hook-secret-0123456789' }] } });
    // the webhook fan-out blocks on the events stream (XREAD), keeps its cursor under a lease and delivers from BullMQ queues, all on the cluster
    const hooks = await startWebhooks({ daemon: s.daemon, log: s.log, tuning: { backoffMs: 50, backoffMaxMs: 200, blockMs: 200 } });
    try {
      expect(isCluster(s.daemon.redis)).toBe(true);
      expect((await s.get('/readyz')).status).toBe(200);
      // the live feed's blocking XREAD runs on a cluster connection of its own
      const sse = await openSse(`${s.http.url}/v1/events`);
      expect(sse.status).toBe(200);
      const subjects = Array.from({ length: N }, () => receiptFields());
      const keys = subjects.map((x) => x.receipt_uuid);
      for (let i = 0; i < N; i += 10) {
        const res = await s.post('/v1/anchors', { subjects: subjects.slice(i, i + 10) }, { auth: true });
        expect(res.status).toBe(202);
      }
      await s.confirm(keys, 90_000);
      const confirmedOnFeed = (m: Array<{ data: string }>): boolean => {
        const done = new Set(m.map((e) => JSON.parse(e.data) as { key?: string; status?: string }).filter((c) => c.status === 'confirmed').map((c) => c.key));
        return keys.every((k) => done.has(k));
      };
      await sse.until(confirmedOnFeed, 20_000).finally(() => sse.close());
      await waitFor('every subject confirmed to the webhook', () => {
        const done = new Set(receiver.delivered().map((r) => JSON.parse(r.body) as { key?: string; status?: string }).filter((c) => c.status === 'confirmed').map((c) => c.key));
        return keys.every((k) => done.has(k));
      }, 20_000);

      const stats = (await (await s.get('/v1/stats')).json()) as { subjects: { total: number; byStatus: Record<string, number> } };
      expect(stats.subjects.total).toBe(N);
      expect(stats.subjects.byStatus.confirmed).toBe(N);
      const one = await s.get(`/v1/anchors/${encodeURIComponent(keys[0]!)}`);
      expect(one.status).toBe(200);
      expect(((await one.json()) as { status: string }).status).toBe('confirmed');

      const exporter = new ProofExporter(s.daemon.store, { relays: s.config.nostr.relays, calendars: s.config.ots.calendars });
      const headerSource = new HeadersFileSource(s.config.ots.headersFile!);
      for (const k of keys) {
        const proof = JSON.parse(JSON.stringify(await exporter.export(k)));
        const r = await verifyAnchor({ value: proof }, { expectedPubkeys: [s.daemon.signerPubkey!], headerSource, network: 'regtest', requireConfirmed: true });
        expect(r.verdict, `${k}: ${r.reason}`).toBe('PASS');
      }

      // the client commands find the cluster the same way: redis.cluster in the file, or AER1_REDIS_CLUSTER
      const cli = join(REPO_ROOT, 'dist/src/cli/aer1-anchor.js');
      const dir = tempDir('cli');
      const inFile = join(dir, 'cluster.json');
      writeFileSync(inFile, JSON.stringify(s.config));
      const fromEnv = join(dir, 'env.json');
      writeFileSync(fromEnv, JSON.stringify({ ...s.config, redis: { ...s.config.redis, cluster: [] } }));
      const env = { PATH: process.env.PATH ?? '', HOME: dir };
      const status = spawnSync(process.execPath, [cli, 'status', keys[1]!, '--config', inFile], { encoding: 'utf8', env, timeout: 30_000 });
      expect(status.status, status.stderr).toBe(0);
      expect(status.stdout).toMatch(new RegExp(`^${keys[1]}: confirmed`));
      const proofCli = spawnSync(process.execPath, [cli, 'proof', keys[1]!, '--config', fromEnv], { encoding: 'utf8', env: { ...env, AER1_REDIS_CLUSTER: cluster.urls.join(',') }, timeout: 30_000 });
      expect(proofCli.status, proofCli.stderr).toBe(0);
      expect(JSON.parse(proofCli.stdout)).toMatchObject({ digest: expect.any(String), status: 'confirmed' });

      // one hash tag: the state and BullMQ's keys all sit on the master serving it, none elsewhere
      const owner = await cluster.ownerOf(s.daemon.store.keys.counts);
      const perNode = await keysPerNode();
      expect(perNode.get(owner)).toBeGreaterThan(N);
      for (const [port, n] of perNode) if (port !== owner) expect(n, `keys on ${port}`).toBe(0);
      expect(Number(await askNode(owner, 'EXISTS', s.daemon.store.keys.counts))).toBe(1);
    } finally {
      await hooks.stop();
      await s.close();
      await receiver.close();
    }
  });
});

describe('three shard hash tags on the cluster', () => {
  it('{aer1:0}, {aer1:1}, {aer1:2} are served by three different masters, and subjects by their shard spread over all three', async () => {
    const tags = [0, 1, 2].map((i) => StateKeys.forShard('aer1', i, 3));
    const owners = await Promise.all(tags.map((k) => cluster.ownerOf(k.counts)));
    expect(new Set(owners).size).toBe(3);
    // a subject record written under its shard's keys, through the cluster client, lands on that shard's master
    const client = connectRedis({ cluster: cluster.urls });
    try {
      const keys = Array.from({ length: 60 }, () => receiptFields().receipt_uuid);
      for (const k of keys) await client.hset(tags[shardOf(k, 3)]!.subject(k), 'probe', '1');
      const perOwner = new Map<number, number>();
      for (const k of keys) {
        const i = shardOf(k, 3);
        expect(Number(await askNode(owners[i]!, 'EXISTS', tags[i]!.subject(k))), k).toBe(1);
        perOwner.set(owners[i]!, (perOwner.get(owners[i]!) ?? 0) + 1);
      }
      expect([...perOwner.keys()].sort()).toEqual([...owners].sort());
      for (const k of keys) await client.del(tags[shardOf(k, 3)]!.subject(k));
    } finally {
      await client.quit();
    }
  });
});

describe('aer1-anchord on redis.cluster, SIGKILLed mid-run', () => {
  it('resumes after the kill: all confirmed, none lost, none stored twice', { timeout: 240_000 }, async () => {
    const N = 600;
    const { result, acceptedAtKill } = await killMidRunOnCluster({
      urls: cluster.urls,
      n: N,
      relays: 2,
      name: 'daemon-sigkill-cluster',
      check: async (_issuer, _keys, relays) => {
        for (const relay of relays) expect(anchorEventCount(relay)).toBe(N);
      },
    });
    expect(result.lost).toBe(0);
    expect(result.duplicates).toBe(0);
    report(result, { acceptedAtKill });
  });
});

// last: it kills a master, and the cluster stays down for the rest of the file
describe('/readyz on redis.cluster when the master of {prefix} is lost', () => {
  it('turns 503 naming Redis unreachable, each probe answered within the request timeout', { timeout: 90_000 }, async () => {
    const s = await startStack({ redisUrl: { cluster: cluster.urls }, overrides: { redis: { cluster: cluster.urls } }, http: { redisTimeoutMs: 1000 } });
    try {
      expect((await s.get('/readyz')).status).toBe(200);
      await cluster.kill(await cluster.ownerOf(s.daemon.store.keys.probe));
      let slowest = 0;
      const res = await waitFor('/readyz red', async () => {
        const t0 = Date.now();
        const r = await s.get('/readyz');
        slowest = Math.max(slowest, Date.now() - t0);
        return r.status === 503 ? r : null;
      }, 30_000, 200);
      // no probe waited on the lost node much past http.redisTimeoutMs (1 s; slack for a loaded machine)
      expect(slowest).toBeLessThan(5000);
      expect(JSON.stringify(await res.json())).toMatch(/"code":"not_ready","message":"redis: Redis is unreachable/);
    } finally {
      // the daemon's stop drops its connections after STOP_GRACE_MS (10 s) when its workers wait on the lost master: bounded here too
      await Promise.race([s.close(), new Promise((r) => setTimeout(r, 20_000).unref())]);
    }
  });
});
