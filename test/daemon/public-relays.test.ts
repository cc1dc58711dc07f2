/**
 * The daemon against relays that behave as public relays do (dev relay profiles, each with
 * a truthful NIP-11 document): `damus` rate-limits per key, `pow` asks NIP-13 proof of work,
 * `auth` takes writes only after NIP-42 AUTH; `paid` and `restricted` can never take our
 * events. Real Redis, real relays on loopback, the default majority quorum.
 *
 * AER1_MIX_SUBJECTS sets the number of subjects of the mixed run (default 200).
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getPow } from 'nostr-tools/nip13';
import { startDevRelay, type DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { Daemon } from '../../src/daemon/daemon.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { generateSecretKey } from '../../src/core/nostr/keys.js';
import { verifySignedEvent } from '../../src/core/nostr/events.js';
import { loadFixture } from '../fixtures/index.js';
import { Issuer, REPO_ROOT, receiptFields, startDaemon, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const N = Number(process.env.AER1_MIX_SUBJECTS ?? 200);
const POW = 8;
const verifyBin = join(REPO_ROOT, 'bin/aer1-verify-anchor.js');

describe(`${N} subjects on damus, pow and auth relays (majority quorum)`, () => {
  let damus: DevRelay;
  let pow: DevRelay;
  let auth: DevRelay;
  let daemon: Daemon;
  let issuer: Issuer;
  let exporter: ProofExporter;
  const key = generateSecretKey();
  const subjects = Array.from({ length: N }, () => receiptFields());
  const receipt = { ...(loadFixture('receipt-minimal') as Record<string, unknown>), id: randomUUID() };
  const total = N + 1;
  let started = 0;

  beforeAll(async () => {
    [damus, pow, auth] = await Promise.all([
      startDevRelay({ profile: 'damus', profileOptions: { ratePerMinute: 120 } }),
      startDevRelay({ profile: 'pow', profileOptions: { powDifficulty: POW } }),
      startDevRelay({ profile: 'auth' }),
    ]);
    const config = testConfig({ relays: [damus, pow, auth] });
    expect(config.nostr.quorum).toBe(0);
    daemon = await startDaemon(config, undefined, key);
    issuer = new Issuer(config);
    exporter = new ProofExporter(issuer.store, { relays: config.nostr.relays, calendars: [] });
    started = Date.now();
    await issuer.enqueueMany([...subjects.map((s) => ({ data: s, key: s.receipt_uuid })), { data: receipt, key: receipt.id as string }]);
  });

  afterAll(async () => {
    await daemon?.stop();
    await issuer?.close();
    await Promise.all([damus, pow, auth].map((r) => r?.close()));
  });

  it('every subject reaches confirmed, none left partial', { timeout: 600_000 }, async () => {
    await waitFor(`${total} confirmed`, async () => (await issuer.count('confirmed')) === total, Math.max(60_000, N * 300), 200);
    const confirmedMs = Date.now() - started;
    expect(await issuer.witnessCount('nostr', 'partial')).toBe(0);
    expect(await issuer.count('partial')).toBe(0);
    expect(await issuer.count('pending')).toBe(0);
    expect(await issuer.count('failed')).toBe(0);
    // the relays' own stores: pow and auth hold every event once the rest of their queues drain
    await waitFor('pow and auth relays hold every subject', () => pow.eventCount() === total && auth.eventCount() === total, Math.max(30_000, N * 100), 200);
    const c = damus.counters();
    process.stdout.write(
      `[public-relays] N=${N}: all confirmed in ${confirmedMs} ms; stored per relay: damus ${damus.eventCount()}, pow ${pow.eventCount()}, auth ${auth.eventCount()}; ` +
        `damus rate-limited answers ${c.refused['rate-limited'] ?? 0}; pow refusals ${pow.counters().refused.pow ?? 0}; auth ${JSON.stringify(auth.counters())}\n`,
    );
    // damus took what its rate allows and answered rate-limited: to the rest, which waits (never failed)
    expect(c.refused['rate-limited'] ?? 0).toBeGreaterThan(0);
    expect(damus.eventCount()).toBeGreaterThan(0);
    expect(damus.eventCount()).toBeLessThanOrEqual(total);
  });

  it('the pow relay holds mined copies carrying the difficulty it asks, the reports say what was mined', async () => {
    const events = pow.events();
    expect(events).toHaveLength(total);
    for (const e of events) {
      expect(getPow(e.id)).toBeGreaterThanOrEqual(POW);
      expect(e.tags.find((t) => t[0] === 'nonce')?.[2]).toBe(String(POW));
      expect(verifySignedEvent(JSON.stringify(e)).ok).toBe(true);
      expect(e.pubkey).toBe(key.publicKey);
    }
    // the auth relay holds the events themselves (no nonce), the same envelopes
    expect(auth.events().every((e) => !e.tags.some((t) => t[0] === 'nonce'))).toBe(true);
    expect(new Set(events.map((e) => e.content))).toEqual(new Set(auth.events().map((e) => e.content)));
    const record = await issuer.store.subjects.getRecord(subjects[0]!.receipt_uuid);
    const report = (await issuer.store.events.relayReports(record!.nostrEventId!)).find((r) => r.url === pow.url);
    expect(report).toMatchObject({ status: 'accepted', final: true, pow: expect.any(Number) });
    expect(report!.pow).toBeGreaterThanOrEqual(POW);
    expect(report!.copyId).not.toBe(record!.nostrEventId);
  });

  it('the auth relay saw one AUTH per connection, from the daemon key', () => {
    const c = auth.counters();
    expect(c.authPerConnection.length).toBeGreaterThanOrEqual(1);
    expect(c.authPerConnection.every((n) => n === 1)).toBe(true);
    expect(c.authPerConnection.length).toBeLessThanOrEqual(c.connections);
    expect(auth.events().every((e) => e.pubkey === key.publicKey)).toBe(true);
  });

  it('the proof of a subject whose pow relay took a mined copy verifies with aer1-verify-anchor, offline and --online', async () => {
    const proof = await exporter.export(receipt.id as string);
    const powEntry = proof!.nostr!.relays.find((r) => r.url === pow.url);
    expect(powEntry?.event?.id).toBeDefined();
    expect(getPow(powEntry!.event!.id)).toBeGreaterThanOrEqual(POW);
    expect(proof!.nostr!.relays.find((r) => r.url === auth.url)?.event).toBeUndefined();
    const file = join(tempDir('pow-proof'), 'receipt.json');
    writeFileSync(file, JSON.stringify({ ...receipt, anchor_proof: proof }));
    // asynchronously: the relays answering --online live in this process
    const run = (...args: string[]) =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, [verifyBin, file, '--json', '--expected-pubkey', key.publicKey, ...args], { encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) => {
          resolve({ status: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr });
        });
      });
    const offline = await run();
    expect(offline.status, offline.stdout + offline.stderr).toBe(0);
    const report = JSON.parse(offline.stdout) as { verdict: string; checks: Array<{ name: string; status: string; detail: string }> };
    expect(report.verdict).toBe('PASS');
    const ev = report.checks.find((c) => c.name === 'nostr-event')!;
    expect(ev.status).toBe('PASS');
    expect(ev.detail).toContain(`${pow.url} took copy ${powEntry!.event!.id} (proof of work`);
    // --online asks the pow relay for the copy it holds, the auth relay for the event
    const online = await run('--online', '--relay', pow.url, '--relay', auth.url);
    expect(online.status, online.stdout + online.stderr).toBe(0);
    const onlineCheck = (JSON.parse(online.stdout) as typeof report).checks.find((c) => c.name === 'online')!;
    expect(onlineCheck.status, onlineCheck.detail).toBe('PASS');
    expect(onlineCheck.detail).toContain(pow.url);
    expect(onlineCheck.detail).toContain(auth.url);
    // a copy whose content was changed is caught
    const forged = structuredClone(proof!);
    const entry = forged.nostr!.relays.find((r) => r.url === pow.url)!;
    entry.event = { ...entry.event!, content: entry.event!.content.replace('"receipt"', '"receipt" ') };
    writeFileSync(file, JSON.stringify({ ...receipt, anchor_proof: forged }));
    const bad = await run();
    expect(bad.status).toBe(1);
    expect((JSON.parse(bad.stdout) as typeof report).checks.find((c) => c.name === 'nostr-event')?.status).toBe('FAIL');
  });
});

describe('relays that can never take our events (payment_required, restricted_writes, max_message_length)', () => {
  let relays: DevRelay[] = [];
  const daemons: Daemon[] = [];
  const issuers: Issuer[] = [];

  beforeAll(async () => {
    relays = await Promise.all([
      startDevRelay(),
      startDevRelay(),
      startDevRelay({ profile: 'paid' }),
      startDevRelay({ profile: 'restricted' }),
      // states a message cap our events are over (about 900 bytes)
      startDevRelay({ profile: 'strict', profileOptions: { maxMessageLength: 300 } }),
    ]);
  });

  afterAll(async () => {
    await Promise.all(daemons.map((d) => d.stop()));
    await Promise.all(issuers.map((i) => i.close()));
    await Promise.all(relays.map((r) => r.close()));
  });

  async function run(quorum: number): Promise<{ issuer: Issuer; keys: string[] }> {
    const config = testConfig({ relays, overrides: { nostr: { quorum, maxAttempts: 50 } } });
    daemons.push(await startDaemon(config));
    const issuer = new Issuer(config);
    issuers.push(issuer);
    const subjects = Array.from({ length: 5 }, () => receiptFields());
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    return { issuer, keys: subjects.map((s) => s.receipt_uuid) };
  }

  it('marks them failed at once with the reason, never sends to them, and the witness finishes confirmed when the quorum allows', async () => {
    const { issuer, keys } = await run(2);
    await waitFor('5 confirmed', async () => (await issuer.count('confirmed')) === 5, 30_000);
    for (const key of keys) {
      const record = await issuer.store.subjects.getRecord(key);
      const reports = await waitFor('all four relays answered for good', async () => {
        const r = await issuer.store.events.relayReports(record!.nostrEventId!);
        return r.length === 5 && r.every((x) => x.final) ? r : null;
      });
      expect(reports.find((r) => r.url === relays[4]!.url)).toMatchObject({ status: 'failed', prefix: 'policy', attempts: 1, message: expect.stringMatching(/^relay policy \(NIP-11\): max_message_length 300 bytes, our event message is \d+$/) });
      const paid = reports.find((r) => r.url === relays[2]!.url)!;
      const restricted = reports.find((r) => r.url === relays[3]!.url)!;
      expect(paid).toMatchObject({ status: 'failed', prefix: 'policy', attempts: 1, final: true, message: 'relay policy (NIP-11): payment_required' });
      expect(restricted).toMatchObject({ status: 'failed', prefix: 'policy', attempts: 1, final: true, message: 'relay policy (NIP-11): restricted_writes' });
    }
    // never sent: the relays refused nothing and hold nothing
    for (const r of relays.slice(2)) {
      expect(r.eventCount()).toBe(0);
      expect(r.counters().refused).toEqual({});
    }
  });

  it('ends the witness failed, naming them, when they put the majority quorum out of reach', async () => {
    const { issuer, keys } = await run(3);
    await waitFor('5 failed', async () => (await issuer.witnessCount('nostr', 'failed')) === 5, 30_000);
    const history = await issuer.store.subjects.history(keys[0]!);
    const reason = history.map((h) => h.detail ?? '').join(' ');
    expect(reason).toContain('quorum 3 unreachable');
    expect(reason).toContain('payment_required');
    expect(reason).toContain('restricted_writes');
    expect(reason).toContain('max_message_length');
  });
});

describe('a relay that states nothing and answers pow: naming a difficulty', () => {
  let relays: DevRelay[] = [];
  let daemon: Daemon;
  let issuer: Issuer;

  beforeAll(async () => {
    relays = await Promise.all([startDevRelay(), startDevRelay()]);
    // no NIP-11 limitation: the difficulty is learnt from the answer (as nos.lol asks when a key writes fast)
    relays[1]!.beforeEvent = (e) => (getPow(e.id) < 10 ? { accept: false, message: 'pow: difficulty 10 required' } : undefined);
    const config = testConfig({ relays, overrides: { nostr: { quorum: 2, readBack: true } } });
    daemon = await startDaemon(config);
    issuer = new Issuer(config);
  });

  afterAll(async () => {
    await daemon?.stop();
    await issuer?.close();
    await Promise.all(relays.map((r) => r.close()));
  });

  it('mines a copy at that difficulty in the same job, reads the copy back and marks the relay stored', async () => {
    const subjects = Array.from({ length: 10 }, () => receiptFields());
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    await waitFor('10 confirmed', async () => (await issuer.count('confirmed')) === 10, 30_000);
    for (const s of subjects) {
      const record = await issuer.store.subjects.getRecord(s.receipt_uuid);
      const report = (await issuer.store.events.relayReports(record!.nostrEventId!)).find((r) => r.url === relays[1]!.url)!;
      expect(report).toMatchObject({ status: 'stored', final: true, attempts: 1 });
      expect(report.pow).toBeGreaterThanOrEqual(10);
    }
    expect(relays[1]!.events().every((e) => getPow(e.id) >= 10)).toBe(true);
    expect(relays[1]!.eventCount()).toBe(10);
  });
});
