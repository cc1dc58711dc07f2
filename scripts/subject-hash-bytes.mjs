#!/usr/bin/env node
/**
 * `node scripts/subject-hash-bytes.mjs [N]` (after `npm run build`): the bytes of a confirmed
 * batch-mode subject's hash on a private redis-server, with production-like values — N
 * subjects (default 2,000) accepted in bulk, cut into one Nostr and one OTS batch of a 4-digit
 * sequence, Nostr confirmed 2 s and OTS 3 h after acceptance (setWitnessMany, as the
 * batchers move them). Prints MEMORY USAGE of the subject hashes (mean, min, max), one
 * hash's fields, then what retiring them all (forget) adds to the state-change stream.
 * docs/performance.md quotes it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { AnchorStore } from '../dist/src/adapters/state/anchor-store.js';
import { startEmbeddedRedis } from '../dist/src/daemon/embedded-redis.js';

const n = Number(process.argv[2] ?? 2000);
const dir = mkdtempSync(join(tmpdir(), 'hash-bytes-'));
const server = await startEmbeddedRedis({ dir, appendonly: false });
const redis = new Redis(server.url, { maxRetriesPerRequest: null });
try {
  let clock = 1_764_590_000_000;
  const store = new AnchorStore(redis, 'bytes', () => clock);
  await store.openSchema({ write: true });
  const k = store.keys;
  const keys = Array.from({ length: n }, () => randomBytes(16).toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-'));
  const subjects = keys.map((key) => ({ key, kind: 'receipt', envelopeCanonical: `{"receipt_uuid":"${key}","root":"${randomBytes(32).toString('hex')}"}`, digest: randomBytes(32).toString('hex'), fingerprint: randomBytes(32).toString('hex') }));
  for (let i = 0; i < n; i += 250) await store.subjects.acceptMany({ witnesses: ['nostr', 'ots'], inboxes: ['nostr', 'ots'] }, subjects.slice(i, i + 250));
  await redis.set(k.batchSeq('nostr'), 1233);
  await redis.set(k.batchSeq('ots'), 1233);
  clock += 1000;
  const nb = await store.batches.cutBatch('nostr', n);
  const ob = await store.batches.cutBatch('ots', n);
  clock += 1000;
  await store.subjects.setWitnessMany(keys, 'nostr', 'partial', 1, 'wss://a: accepted', nb.id);
  await store.subjects.setWitnessMany(keys, 'nostr', 'confirmed', 2, 'wss://b: accepted', nb.id);
  clock += 3000;
  await store.subjects.setWitnessMany(keys, 'ots', 'partial', 1, 'submitted to 2 calendars', ob.id);
  clock += 3 * 3600_000;
  await store.subjects.setWitnessMany(keys, 'ots', 'confirmed', 2, 'bitcoin block 925000', ob.id);
  const sizes = [];
  for (const key of keys) sizes.push(Number(await redis.call('MEMORY', 'USAGE', k.subject(key), 'SAMPLES', '0')));
  const mean = sizes.reduce((a, b) => a + b, 0) / n;
  const hist = {};
  for (const b of sizes) hist[b] = (hist[b] ?? 0) + 1;
  console.log(`subject hash, confirmed, N=${n}: mean ${mean.toFixed(1)} B, min ${Math.min(...sizes)}, max ${Math.max(...sizes)}; by size ${JSON.stringify(hist)}`);
  const one = await redis.hgetallBuffer(k.subject(keys[n - 1]));
  console.log(`fields of one (${Object.keys(one).length}): ${Object.entries(one).map(([f, v]) => `${f}=${/^[\x20-\x7e]*$/.test(v.toString('latin1')) ? v.toString() : `<${v.length} bytes>`}`).join(' ')}`);
  const record = await store.subjects.getRecord(keys[n - 1]);
  console.log(`read back: ${JSON.stringify({ witnesses: record.witnesses, batches: record.batches, createdMs: record.createdMs, updatedMs: record.updatedMs })}`);
  const before = { len: await redis.xlen(k.events), bytes: Number(await redis.call('MEMORY', 'USAGE', k.events, 'SAMPLES', '0')) };
  const removed = await store.subjects.forget(keys);
  const after = { len: await redis.xlen(k.events), bytes: Number(await redis.call('MEMORY', 'USAGE', k.events, 'SAMPLES', '0')) };
  console.log(`forget ${removed.length}: stream +${after.len - before.len} entries, +${after.bytes - before.bytes} B (${((after.bytes - before.bytes) / n).toFixed(1)} B per subject)`);
} finally {
  redis.disconnect();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
