#!/usr/bin/env node
/**
 * `node scripts/state-stream-cost.mjs [N]` (after `npm run build`): what the state scripts cost
 * per subject on a private redis-server — N subjects (default 1,000) accepted in bulk
 * (acceptMany), then moved as one batch through nostr confirmed, ots partial and ots confirmed
 * (setWitnessMany, chunks of 250). Prints per phase the Redis commands per subject (INFO
 * commandstats, the scripts' inner commands included) and, at the end, the state-change
 * stream's entries and bytes (MEMORY USAGE) per subject; then 200 subjects one per call
 * (accept, two transitions each: envelope mode, the reconciler). docs/performance.md quotes it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { AnchorStore } from '../dist/src/adapters/state/anchor-store.js';
import { startEmbeddedRedis } from '../dist/src/daemon/embedded-redis.js';

const n = Number(process.argv[2] ?? 1000);
const dir = mkdtempSync(join(tmpdir(), 'stream-cost-'));
const server = await startEmbeddedRedis({ dir, appendonly: false });
const redis = new Redis(server.url, { maxRetriesPerRequest: null });
try {
  const store = new AnchorStore(redis, 'cost');
  await store.openSchema({ write: true });
  const stats = async () => {
    const text = await redis.info('commandstats');
    const out = new Map();
    for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out.set(m[1], Number(m[2]));
    return out;
  };
  const phase = async (name, fn) => {
    const a = await stats();
    await fn();
    const b = await stats();
    const per = [];
    let total = 0;
    for (const [cmd, calls] of b) {
      if (cmd === 'info') continue;
      const d = calls - (a.get(cmd) ?? 0);
      if (d > 0) {
        per.push(`${cmd} ${(d / n).toFixed(2)}`);
        total += d;
      }
    }
    console.log(`${name}: ${(total / n).toFixed(2)} commands per subject (${per.join(', ')})`);
  };
  const keys = Array.from({ length: n }, (_, i) => `cost-${i}-${randomBytes(4).toString('hex')}`);
  const subjects = keys.map((key) => ({ key, kind: 'receipt', envelopeCanonical: `{"receipt_uuid":"${key}","root":"${randomBytes(32).toString('hex')}"}`, digest: randomBytes(32).toString('hex'), fingerprint: randomBytes(32).toString('hex') }));
  await phase('accept (bulk)', () => store.subjects.acceptMany({ witnesses: ['nostr', 'ots'], inboxes: [] }, subjects));
  const batch = 'b1';
  await phase('nostr confirmed (batch)', () => store.subjects.setWitnessMany(keys, 'nostr', 'confirmed', 1, 'wss://a: accepted', batch));
  await phase('ots partial (batch)', () => store.subjects.setWitnessMany(keys, 'ots', 'partial', 1, 'submitted to 2 calendars', batch));
  await phase('ots confirmed (batch)', () => store.subjects.setWitnessMany(keys, 'ots', 'confirmed', 2, 'block 800000', batch));
  const k = store.keys;
  const bytes = Number(await redis.call('MEMORY', 'USAGE', k.events, 'SAMPLES', '0'));
  console.log(`state-change stream: ${await redis.xlen(k.events)} entries, ${Math.round(bytes / n)} bytes per confirmed subject (N=${n})`);
  // one subject per call (envelope mode, the reconciler): accept and one transition each
  const single = subjects.slice(0, Math.min(n, 200)).map((x) => ({ ...x, key: `one-${x.key}` }));
  const perSingle = async (name, fn) => {
    const a = await stats();
    for (const x of single) await fn(x);
    const b = await stats();
    let total = 0;
    for (const [cmd, calls] of b) if (cmd !== 'info') total += calls - (a.get(cmd) ?? 0);
    console.log(`${name}: ${(total / single.length).toFixed(2)} commands per subject`);
  };
  await perSingle('one subject per call: accept', (x) => store.subjects.acceptMany({ witnesses: ['nostr', 'ots'], inboxes: [] }, [x]));
  await perSingle('one subject per call: nostr partial', (x) => store.subjects.setWitness(x.key, 'nostr', 'partial', 1, 'wss://a: accepted'));
  await perSingle('one subject per call: nostr confirmed', (x) => store.subjects.setWitness(x.key, 'nostr', 'confirmed', 2, 'wss://b: accepted'));
} finally {
  redis.disconnect();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
