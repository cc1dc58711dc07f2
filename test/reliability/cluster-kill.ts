/**
 * The built daemon on a Redis Cluster, SIGKILLed once a third of the subjects are in, then
 * started again until every subject is confirmed; audited like the rest of the reliability
 * suite. Shared by the cluster test (one shard) and the shards test (K shards on the masters).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { expect } from 'vitest';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { Issuer, REPO_ROOT, receiptFields, spawnDaemon, startCalendars, startRelays, stopChild, tempDir, testConfig, waitFor } from '../helpers/harness.js';
import { audit, confirmAll, tapRelay, type AuditResult } from './audit.js';

export interface ClusterKillOptions {
  /** The cluster's node URLs (redis.cluster). */
  urls: string[];
  /** Subjects enqueued before the daemon starts. */
  n: number;
  relays: number;
  /** redis.shards (default 1). */
  shards?: number;
  /** The audit's name (its summary line). */
  name: string;
  /** Run once every subject is confirmed, before the audit, while relays and issuer are up. */
  check?: (issuer: Issuer, keys: readonly string[], relays: readonly DevRelay[]) => Promise<void>;
}

export interface ClusterKillResult {
  result: AuditResult;
  /** Subjects in state when the daemon was killed. */
  acceptedAtKill: number;
}

export async function killMidRunOnCluster(o: ClusterKillOptions): Promise<ClusterKillResult> {
  const bin = join(REPO_ROOT, 'dist/src/cli/aer1-anchord.js');
  expect(existsSync(bin), `${bin} is missing: run npm run build`).toBe(true);
  let relays: DevRelay[] = [];
  let calendars: DevCalendar[] = [];
  let child: ChildProcess | null = null;
  let issuer: Issuer | null = null;
  try {
    relays = await startRelays(o.relays);
    const taps = relays.map(tapRelay);
    const headersFile = join(tempDir('headers'), 'headers.json');
    calendars = await startCalendars(1, headersFile);
    const config = testConfig({
      relays,
      calendars,
      headersFile,
      overrides: { redis: { cluster: o.urls, ...(o.shards ? { shards: o.shards } : {}) }, queue: { stalledIntervalMs: 1000 }, nostr: { maxAttempts: 1000 }, ots: { batchWindowMs: 300, batchMaxSize: 500 } },
    });
    const keyFile = join(tempDir('key'), 'nostr.key');
    writeKeyFile(keyFile);
    issuer = new Issuer(config, { cluster: o.urls });
    const subjects = Array.from({ length: o.n }, () => receiptFields());
    const keys = subjects.map((x) => x.receipt_uuid);
    let stderr = '';
    const spawn = (): ChildProcess => {
      const c = spawnDaemon(config, null, keyFile);
      c.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(-2000)));
      return c;
    };
    await issuer.enqueueMany(subjects.map((x) => ({ data: x, key: x.receipt_uuid })));
    child = spawn();
    const state = issuer.state;
    await waitFor('a third accepted', async () => (await state.subjectCount()) >= o.n / 3, 90_000, 20).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; stderr: ${stderr}`);
    });
    child.kill('SIGKILL');
    await new Promise((r) => child!.once('exit', r));
    child = null;
    const acceptedAtKill = await state.subjectCount();
    child = spawn();
    await confirmAll(issuer, keys, calendars, 180_000);
    await stopChild(child);
    child = null;
    await o.check?.(issuer, keys, relays);
    const result = await audit(o.name, issuer, keys, taps, { historySample: 100 });
    return { result, acceptedAtKill };
  } finally {
    if (child) await stopChild(child);
    await issuer?.close();
    await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
  }
}
