/**
 * Issue 29, reproductions 1–3 on a real local 3-master cluster (AOF on, a short
 * cluster-node-timeout so the cluster reports down within a second or two): the built daemon
 * with redis.cluster and 3 shards takes subjects from the usual `{prefix}` queue in envelope
 * mode; about a second in, with intake, relay publishing and calendar polling all in flight,
 * the master serving `{prefix}` is SIGKILLed, left down until the cluster has failed, and
 * restarted from its own folder. Without restarting the daemon every subject must end
 * confirmed (none lost, none stuck, none stored twice on the relay); while the cluster is
 * down every HTTP path answers 503 with Retry-After, never 500; and a SIGTERM afterwards
 * stops the daemon cleanly (exit 0) well within its 20 s bound. http.redisTimeoutMs stays at its
 * 2.5 s default: longer than the cluster client's 16 redirections, so the wrapped "Too many Cluster
 * redirections. Last error: ReplyError: CLUSTERDOWN …" reaches the HTTP error mapping.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import { freePort } from '../../src/daemon/embedded-redis.js';
import { StateKeys } from '../../src/adapters/state/keys.js';
import { Issuer, REPO_ROOT, receiptFields, spawnDaemon, startCalendars, startRelays, stopChild, tempDir, testConfig, waitFor } from '../helpers/harness.js';
import { askNode, startLocalCluster, type LocalCluster } from '../helpers/redis-cluster.js';
import { anchorEventCount, audit, confirmAll, report, tapRelay } from './audit.js';

const N = 300;
/** How long the killed master stays down once the cluster has reported the failure. */
const DOWN_AFTER_FAIL_MS = 4000;
const TOKEN = 'cluster-restart-token-0123456789';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function clusterState(port: number): Promise<string> {
  return /cluster_state:(\w+)/.exec(String(await askNode(port, 'CLUSTER', 'INFO')))?.[1] ?? 'unknown';
}

describe('a cluster master SIGKILLed early and restarted under a running daemon (3 shards)', () => {
  it(`${N} subjects: all confirmed without a daemon restart; HTTP 503 + Retry-After (never 500) while down; SIGTERM exits 0 in time`, { timeout: 150_000 }, async () => {
    const bin = join(REPO_ROOT, 'dist/src/cli/aer1-anchord.js');
    expect(existsSync(bin), `${bin} is missing: run npm run build`).toBe(true);
    const cluster: LocalCluster = await startLocalCluster({ appendonly: true, nodeTimeoutMs: 1000 });
    cleanups.push(() => cluster.stop());
    const relays = await startRelays(1);
    cleanups.push(() => Promise.all(relays.map((r) => r.close())));
    const taps = relays.map(tapRelay);
    const headersFile = join(tempDir('headers'), 'headers.json');
    const calendars = await startCalendars(1, headersFile);
    cleanups.push(() => Promise.all(calendars.map((c) => c.close())));
    const port = await freePort();
    const config = testConfig({
      relays,
      calendars,
      headersFile,
      overrides: {
        redis: { cluster: cluster.urls, shards: 3 },
        queue: { stalledIntervalMs: 1000, concurrency: 4 },
        reconcile: { intervalMs: 2000 },
        nostr: { mode: 'envelope', maxAttempts: 1000 },
        ots: { batchWindowMs: 300, batchMaxSize: 50 },
        http: { enabled: true, port, token: TOKEN },
        log: { level: 'info', format: 'json' },
      },
    });
    const keyFile = join(tempDir('key'), 'nostr.key');
    writeKeyFile(keyFile);
    const issuer = new Issuer(config, { cluster: cluster.urls });
    cleanups.push(() => issuer.close());
    const subjects = Array.from({ length: N }, () => receiptFields());
    const keys = subjects.map((x) => x.receipt_uuid);
    await issuer.enqueueMany(subjects.map((x) => ({ data: x, key: x.receipt_uuid })));

    let log = '';
    const child: ChildProcess = spawnDaemon(config, null, keyFile);
    cleanups.push(() => stopChild(child));
    child.stderr?.on('data', (d: Buffer) => (log += d.toString('utf8')));
    // AER1_CLUSTER_LOG=FILE keeps the daemon's log for a look afterwards
    if (process.env.AER1_CLUSTER_LOG) cleanups.push(async () => writeFileSync(process.env.AER1_CLUSTER_LOG!, log));
    const exited = new Promise<{ code: number | null; at: number }>((r) => child.once('exit', (code) => r({ code, at: Date.now() })));
    const base = `http://127.0.0.1:${port}`;
    await waitFor('the daemon serving HTTP', async () => (await fetch(`${base}/livez`).catch(() => null))?.status === 200, 30_000, 50);

    // the kill lands with intake, publishing and calendar polling all in flight
    const owner = await cluster.ownerOf(new StateKeys(config.redis.prefix).counts);
    await waitFor('intake, relay publishing and a calendar submission under way', async () => {
      const nostr = (await issuer.state.countByWitness(['nostr'])).nostr ?? {};
      return (nostr.confirmed ?? 0) > 0 && calendars[0]!.pendingCount() > 0;
    }, 30_000, 20);
    const acceptedAtKill = await issuer.state.subjectCount();
    await cluster.kill(owner);
    const others = cluster.ports.filter((p) => p !== owner);
    await waitFor('the cluster reporting fail', async () => (await clusterState(others[0]!)) === 'fail', 30_000, 100);

    // every HTTP path while the cluster is down: 503 with Retry-After, never 500
    const paths = ['/v1/stats', '/v1/anchors?limit=5', '/v1/anchors?status=pending&limit=5', `/v1/anchors/${keys[0]}`, `/v1/anchors/${keys[0]}/proof`, '/readyz', '/metrics'];
    const seen: Record<string, number[]> = {};
    const missingRetryAfter: string[] = [];
    const probeUntil = Date.now() + DOWN_AFTER_FAIL_MS;
    // at least two rounds, then until the master has been down DOWN_AFTER_FAIL_MS past the fail
    for (let i = 0; i < 100 && (i < 2 || Date.now() < probeUntil); i++) {
      for (const p of paths) {
        const res = await fetch(`${base}${p}`);
        await res.arrayBuffer();
        (seen[p] ??= []).push(res.status);
        // /readyz is a probe: red with its reasons, no Retry-After (docs/http.md)
        if (res.status === 503 && p !== '/readyz' && !res.headers.get('retry-after')) missingRetryAfter.push(p);
      }
      const post = await fetch(`${base}/v1/anchors`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(receiptFields()) });
      await post.arrayBuffer();
      (seen['POST /v1/anchors'] ??= []).push(post.status);
    }
    await cluster.restart(owner);
    await waitFor('the cluster ok again', async () => (await Promise.all(cluster.ports.map(clusterState))).every((s) => s === 'ok'), 30_000, 100);
    const healthyAt = Date.now();

    const fiveHundreds = Object.entries(seen).filter(([, st]) => st.some((s) => s >= 500 && s !== 503));
    expect(fiveHundreds, JSON.stringify(seen)).toEqual([]);
    // /metrics may still answer from what it holds; the API paths that read Redis answered 503
    for (const p of ['/v1/stats', '/v1/anchors?limit=5', '/readyz']) expect(seen[p], p).toContain(503);
    expect(missingRetryAfter).toEqual([]);

    // no daemon restart: the same process confirms every subject
    await confirmAll(issuer, keys, calendars, 60_000);
    const recoveredMs = Date.now() - healthyAt;
    expect(child.exitCode).toBeNull();

    // SIGTERM after the master was lost and came back: a clean stop (exit 0), well within the 20 s bound
    const termAt = Date.now();
    child.kill('SIGTERM');
    const { code, at } = await exited;
    const stopMs = at - termAt;
    expect(log).not.toContain('did not stop within');
    expect(code).toBe(0);
    expect(stopMs).toBeLessThan(20_000);

    for (const relay of relays) expect(anchorEventCount(relay)).toBe(N);
    const result = await audit('cluster-master-restart', issuer, keys, taps, { historySample: 100 });
    expect(result.lost).toBe(0);
    expect(result.duplicates).toBe(0);
    const errorLines = log.split('\n').filter((l) => l.includes('"level":50')).length;
    report(result, { shards: 3, acceptedAtKill, recoveredMs, stopMs, exitCode: code ?? -1, probes: Object.values(seen).reduce((n, s) => n + s.length, 0), errorLines });
  });
});
