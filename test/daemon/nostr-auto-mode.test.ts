/**
 * Auto mode (the default) end to end: real Redis, two @nostr-relay dev relays on loopback.
 * A quiet issuer gets one event per subject; a burst gets batch events and no relay is sent
 * more than its rate budget; every proof from both phases verifies offline and says which
 * kind of event it got; once the burst drains, a quiet subject gets its own event again.
 * The quiet issuer, 50 subjects spread over a minute against a budget that allows
 * them, is scaled in time by 20 (ratePerMinute 1200, horizon 3 s: budget 60 events; 50
 * subjects 60 ms apart) so the phases take seconds. AER1_AUTO_BURST sets the burst size
 * (default 500).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { Daemon } from '../../src/daemon/daemon.js';
import type { Config } from '../../src/adapters/config/config.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { subjectDetail } from '../../src/adapters/state/subject-view.js';
import { verifyAnchor } from '../../src/core/verify/pipeline.js';
import { EventCheckCache } from '../../src/core/verify/nostr.js';
import { generateSecretKey } from '../../src/core/nostr/keys.js';
import { autoBudget } from '../../src/core/nostr/auto-mode.js';
import { envelopeEvent, serializeEvent } from '../../src/core/nostr/events.js';
import { buildEnvelope, envelopeCanonical } from '../../src/core/envelope/envelope.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { rootFingerprint } from '../../src/adapters/intake/intake.js';
import { Issuer, receiptFields, startDaemon, startRelays, testConfig, waitFor } from '../helpers/harness.js';

const BURST = Number(process.env.AER1_AUTO_BURST ?? 500);
const RATE = 1200;
const HORIZON_MS = 3000;
/**
 * Long beside the quiet issuer's spread (3 s), so that "cut as they arrive" (latency well under
 * half the window) and "cut at the window's tick" (up to a whole window) stay apart on a loaded
 * machine too: at 2 s the quiet subjects' worst latency was seen at 1.1–1.4 s under load.
 */
const WINDOW_MS = 6000;
/** The quiet issuer's pace: 50 subjects 60 ms apart, spread over one horizon, within its 60 events. */
const QUIET = 50;
const QUIET_SPACING_MS = 60;
const BUDGET = autoBudget(RATE, HORIZON_MS);
const key = generateSecretKey();

let relays: DevRelay[] = [];
let config: Config;
let daemon: Daemon;
let issuer: Issuer;
const started = Date.now();

beforeAll(async () => {
  relays = await startRelays(2);
  config = testConfig({
    relays,
    overrides: {
      // nostr.mode left to its default: auto is what this file is about.
      nostr: { ratePerMinute: RATE, autoHorizonMs: HORIZON_MS, batchWindowMs: WINDOW_MS, batchMaxSize: 10_000 },
      reconcile: { intervalMs: 500 },
    },
  });
  daemon = await startDaemon(config, undefined, key);
  issuer = new Issuer(config);
});

afterAll(async () => {
  await daemon?.stop();
  await issuer?.close();
  await Promise.all(relays.map((r) => r.close()));
});

type Ev = ReturnType<DevRelay['events']>[number];
const ours = (r: DevRelay): Ev[] => r.events().filter((e) => e.pubkey === key.publicKey);
const perSubject = (r: DevRelay): Ev[] => ours(r).filter((e) => e.tags.some((t) => t[0] === 'i'));
const batchEvents = (r: DevRelay): Ev[] => ours(r).filter((e) => e.tags.some((t) => t[0] === 't' && t[1] === 'aer1-batch'));

/** Enqueues one subject and waits for its Nostr witness to be confirmed; returns its key and how long that took. */
async function quietSubject(): Promise<{ key: string; ms: number }> {
  const s = receiptFields();
  const t0 = Date.now();
  await issuer.enqueue(s, s.receipt_uuid);
  await waitFor(`quiet subject ${s.receipt_uuid} confirmed`, async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.witnesses.nostr?.status === 'confirmed', 20_000, 20);
  return { key: s.receipt_uuid, ms: Date.now() - t0 };
}

/** Exports each subject's proof, verifies it offline, and returns the mode it and the status view say. */
async function verifiedModes(keys: readonly string[]): Promise<Map<string, string>> {
  const exporter = new ProofExporter(issuer.store, { relays: config.nostr.relays, calendars: [] });
  const cache = new EventCheckCache();
  const modes = new Map<string, string>();
  for (const k of keys) {
    const proof = JSON.parse(JSON.stringify(await exporter.export(k))) as { nostr: { mode?: string; batch?: unknown } };
    const report = await verifyAnchor({ value: proof }, { expectedPubkeys: [key.publicKey], eventCache: cache });
    expect(report.verdict, `${k}: ${report.reason}`).toBe('PASS');
    // the event's content is this envelope (own event) or the inclusion path leads to its batch root
    expect(report.checks.find((c) => c.name === (proof.nostr.mode === 'batch' ? 'batch-path' : 'nostr-content'))?.status).toBe('PASS');
    const view = await subjectDetail(issuer.store, config, k);
    // proof, verifier and status view agree on the kind of event the subject got
    expect(proof.nostr.mode).toBe(report.witnesses.nostr?.mode);
    expect(view?.witnesses.nostr?.mode).toBe(proof.nostr.mode);
    expect(proof.nostr.batch !== undefined).toBe(proof.nostr.mode === 'batch');
    modes.set(k, proof.nostr.mode!);
  }
  return modes;
}

describe('nostr auto mode', () => {
  const quiet: string[] = [];
  let burst: string[] = [];

  it('a quiet issuer: one per-subject event for each subject, no batch event, no wait for the batch window', async () => {
    expect(config.nostr.mode).toBe('auto');
    const t0 = Date.now();
    const latencies: number[] = [];
    const enqueuedAt = new Map<string, number>();
    for (let i = 0; i < QUIET; i++) {
      // the issuer's pace (the scenario, not a wait for a condition): one subject every 60 ms
      const due = t0 + i * QUIET_SPACING_MS - Date.now();
      if (due > 0) await new Promise((r) => setTimeout(r, due));
      const s = receiptFields();
      enqueuedAt.set(s.receipt_uuid, Date.now());
      await issuer.enqueue(s, s.receipt_uuid);
      quiet.push(s.receipt_uuid);
    }
    await waitFor(`${QUIET} quiet subjects confirmed`, async () => (await issuer.witnessCount('nostr', 'confirmed')) === QUIET, 30_000, 50);
    for (const k of quiet) {
      const r = await issuer.store.subjects.getRecord(k);
      latencies.push(r!.witnesses.nostr!.confirmedMs! - enqueuedAt.get(k)!);
    }
    console.log(`auto mode quiet issuer: ${QUIET} subjects confirmed in ${latencies.join(', ')} ms (batch window ${WINDOW_MS} ms)`);
    for (const relay of relays) {
      expect(perSubject(relay)).toHaveLength(QUIET);
      expect(batchEvents(relay)).toHaveLength(0);
    }
    // cut as they arrive, not at the next window tick
    expect(Math.max(...latencies)).toBeLessThan(WINDOW_MS / 2);
    const modes = await verifiedModes(quiet);
    expect([...modes.values()]).toEqual(Array(QUIET).fill('envelope'));
  });

  it('a batch decided envelope keeps no digests once its subjects have their own events (no tree is built from them)', async () => {
    const records = await issuer.store.subjects.getRecords(quiet);
    const batchIds = [...new Set(records.map((r) => r!.batches.nostr!.id))];
    expect(batchIds.length).toBeGreaterThan(0);
    const batches = await waitFor('the batches closed without their digests', async () => {
      const all = await Promise.all(batchIds.map((id) => issuer.store.batches.getBatch('nostr', id)));
      return all.every((b) => b !== null && b.digests.length === 0) ? all : null;
    }, 30_000, 50);
    expect(batches.map((b) => b!.fields.mode)).toEqual(batchIds.map(() => 'envelope'));
    expect(batches.reduce((n, b) => n + b!.size, 0)).toBe(quiet.length);
  });

  it(`a burst of ${BURST}: batch events, every relay within its rate budget, every subject confirmed`, async () => {
    const before = relays.map((r) => ours(r).length);
    const subjects = Array.from({ length: BURST }, () => receiptFields());
    burst = subjects.map((s) => s.receipt_uuid);
    const t0 = Date.now();
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    // In envelope mode the relays' 200 a minute would take BURST / 200 minutes.
    await waitFor(`${BURST} burst subjects confirmed`, async () => (await issuer.witnessCount('nostr', 'confirmed')) === quiet.length + BURST, 90_000, 200);
    const confirmMs = Date.now() - t0;
    const modes = await verifiedModes(burst);
    const asBatch = burst.filter((k) => modes.get(k) === 'batch').length;
    const sent = relays.map((r, i) => ours(r).length - before[i]!);
    console.log(`auto mode burst of ${BURST}: confirmed in ${confirmMs} ms; ${asBatch} subjects in batch events; events per relay ${sent.join(', ')} (budget ${BUDGET} per ${HORIZON_MS} ms, ${RATE}/min)`);
    // Per-subject events went only to cuts the budget allowed: at most BUDGET within a horizon.
    expect(BURST - asBatch).toBeLessThanOrEqual(Math.ceil(confirmMs / HORIZON_MS) * BUDGET);
    expect(asBatch).toBeGreaterThan(BURST / 2);
    for (const [i, relay] of relays.entries()) {
      expect(batchEvents(relay).length).toBeGreaterThan(0);
      // every event this relay got in the burst is a batch event or one the budget allowed
      expect(sent[i]!).toBeLessThanOrEqual(batchEvents(relay).length + BUDGET);
    }
    // The whole run so far took under a minute, so no relay may have been sent more than RATE events.
    expect(Date.now() - started).toBeLessThan(60_000);
    for (const relay of relays) expect(ours(relay).length).toBeLessThanOrEqual(RATE);
  });

  it('switches back: once the burst has drained, a quiet subject gets its own event', async () => {
    // drained: the relay queues empty, and the burst's events out of the horizon
    await waitFor('relay queues drained', async () => {
      const { backlog, recent } = await daemon.nostr!.load();
      return backlog === 0 && recent < BUDGET;
    }, 10_000);
    const { key: k } = await quietSubject();
    const modes = await verifiedModes([k]);
    expect(modes.get(k)).toBe('envelope');
    const digest = (await issuer.store.subjects.getRecord(k))!.digest!;
    for (const relay of relays) expect(perSubject(relay).filter((e) => e.tags.some((t) => t[0] === 'x' && t[1] === digest))).toHaveLength(1);
  });
});

/**
 * The decision is recorded on the batch (`mode`, written once): a restart and the
 * reconciler go by it, whatever the rule would say now. Each case prepares the state a
 * daemon that crashed mid-way leaves (through the store, as that daemon wrote it), then
 * starts a daemon on it.
 */
describe('nostr auto mode: a recorded decision stands across a crash', () => {
  async function cutBatch(store: Issuer['store'], n: number): Promise<{ id: string; subjects: Array<{ key: string; canonical: string; digest: string }> }> {
    const subjects = [];
    for (let i = 0; i < n; i++) {
      const claims = receiptFields();
      const canonical = envelopeCanonical(buildEnvelope(claims, new Date()));
      const digest = sha256Hex(canonical);
      const res = await store.subjects.accept({ key: claims.receipt_uuid, kind: 'receipt', envelopeCanonical: canonical, digest, fingerprint: rootFingerprint(claims), witnesses: ['nostr'], inboxes: ['nostr'] });
      expect(res.result).toBe('created');
      subjects.push({ key: claims.receipt_uuid, canonical, digest });
    }
    const cut = await store.batches.cutBatch('nostr', 100);
    expect(cut?.size).toBe(n);
    return { id: cut!.id, subjects };
  }

  type Signer = ReturnType<typeof generateSecretKey>;

  /** Prepares the state on a fresh prefix, then starts a daemon signing as `signer` on it and checks. */
  async function withDaemon(nostr: Record<string, unknown>, signer: Signer, prepare: (store: Issuer['store'], cfg: Config) => Promise<void>, check: (store: Issuer['store'], cfg: Config, d: Daemon) => Promise<void>): Promise<void> {
    const cfg = testConfig({ relays, overrides: { nostr: { batchWindowMs: 200, ...nostr }, reconcile: { intervalMs: 300 } } });
    const iss = new Issuer(cfg);
    let d: Daemon | null = null;
    try {
      await prepare(iss.store, cfg);
      d = await startDaemon(cfg, undefined, signer);
      await check(iss.store, cfg, d);
    } finally {
      await d?.stop();
      await iss.close();
    }
  }

  async function confirmedProofModes(store: Issuer['store'], cfg: Config, signer: { publicKey: string }, keys: readonly string[]): Promise<string[]> {
    await waitFor('subjects confirmed', async () => (await store.subjects.getRecords(keys)).every((r) => r?.witnesses.nostr?.status === 'confirmed'), 20_000);
    const exporter = new ProofExporter(store, { relays: cfg.nostr.relays, calendars: [] });
    const modes: string[] = [];
    for (const k of keys) {
      const proof = JSON.parse(JSON.stringify(await exporter.export(k))) as { nostr: { mode: string } };
      const report = await verifyAnchor({ value: proof }, { expectedPubkeys: [signer.publicKey] });
      expect(report.verdict, report.reason).toBe('PASS');
      modes.push(proof.nostr.mode);
    }
    return modes;
  }

  it('a batch decided "batch" before a crash gets one batch event on restart, though the budget would now allow per-subject events', async () => {
    let keys: string[] = [];
    const signer = generateSecretKey();
    await withDaemon({ ratePerMinute: 100_000 }, signer, async (store) => {
      const b = await cutBatch(store, 3);
      keys = b.subjects.map((s) => s.key);
      // the crashed daemon's decision; it died before making the batch event
      await store.batches.setBatchFields('nostr', b.id, { mode: 'batch' });
    }, async (store, cfg) => {
      expect(await confirmedProofModes(store, cfg, signer, keys)).toEqual(['batch', 'batch', 'batch']);
      for (const relay of relays) {
        const mine = relay.events().filter((e) => e.pubkey === signer.publicKey);
        expect(mine.map((e) => e.tags.some((t) => t[0] === 't' && t[1] === 'aer1-batch'))).toEqual([true]);
      }
    });
  });

  it('a batch decided "envelope" whose job died half-way: the reconciler signs the rest and keeps the event already stored', async () => {
    let keys: string[] = [];
    let stored = '';
    const crashedSigner = generateSecretKey();
    // budget 1: the rule would now give this 2-subject cut a batch event
    await withDaemon({ ratePerMinute: 6, autoHorizonMs: 10_000 }, crashedSigner, async (store, cfg) => {
      const b = await cutBatch(store, 2);
      keys = b.subjects.map((s) => s.key);
      await store.batches.setBatchFields('nostr', b.id, { mode: 'envelope' });
      // it signed and linked the first subject's event, then died: no publish job, no batch job
      const first = b.subjects[0]!;
      const ev = envelopeEvent({ canonical: first.canonical, digestHex: first.digest, kind: cfg.nostr.kind }, crashedSigner);
      stored = serializeEvent(ev);
      expect(await store.events.setSubjectEvents([{ key: first.key, event: ev }])).toEqual([ev.id]);
      await store.batches.closeBatch('nostr', b.id);
    }, async (store, cfg, d) => {
      expect(await confirmedProofModes(store, cfg, crashedSigner, keys)).toEqual(['envelope', 'envelope']);
      const first = await store.subjects.getRecord(keys[0]!);
      for (const relay of relays) {
        const got = relay.events().filter((e) => e.pubkey === crashedSigner.publicKey);
        // one own event per subject, none for the batch; the first is the copy stored before the crash
        expect(got.filter((e) => e.tags.some((t) => t[0] === 'i'))).toHaveLength(2);
        expect(got.find((e) => e.id === first!.nostrEventId)?.sig).toBe((JSON.parse(stored) as { sig: string }).sig);
      }
      // the reconciler did it: the batch job again, and the first event's publish jobs
      const metrics = await d.metrics.registry.getSingleMetricAsString('aer1_reconciler_repairs_total');
      expect(metrics).toMatch(/kind="nostr-batch"} [1-9]/);
      expect(metrics).toMatch(/kind="relay-publish"} [1-9]/);
    });
  });
});
