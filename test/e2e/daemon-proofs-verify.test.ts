/**
 * What strangers will do: take proofs the daemon exported (envelope mode and batch mode,
 * before and after Bitcoin confirmation) and check them with aer1-verify-anchor, which
 * trusts nothing but the proof, the document and a headers file.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { merkleRoot } from '../../src/core/aer1/merkle.js';
import { sha256 } from '../../src/core/aer1/hash.js';
import type { Daemon } from '../../src/daemon/daemon.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { HeadersFileSource } from '../../src/adapters/bitcoin/index.js';
import { generateSecretKey } from '../../src/core/nostr/keys.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { verifyAnchor, type VerifyReport } from '../../src/core/verify/pipeline.js';
import { Issuer, REPO_ROOT, startCalendars, startDaemon, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const fixture = (name: string): unknown => JSON.parse(readFileSync(join(REPO_ROOT, 'test/fixtures', name), 'utf8'));

interface Doc {
  key: string;
  doc: Record<string, unknown> | unknown[];
}

function documents(tag: string): Doc[] {
  const receipt = { ...(fixture('receipt-minimal.json') as Record<string, unknown>), id: `receipt-${tag}` };
  const workflow = { ...(fixture('workflow-receipt-example.json') as Record<string, unknown>), receipt_id: `workflow-${tag}` };
  const chain = fixture('aer1-chain-v07.json') as { entries: Array<Record<string, unknown>> };
  return [
    { key: receipt.id as string, doc: receipt },
    { key: workflow.receipt_id as string, doc: workflow },
    // The chain vector's job id is fixed, so the timeline is anchored in one mode only.
    ...(tag === 'envelope' ? [{ key: 'job-7a1f', doc: { entries: chain.entries } }] : []),
  ];
}

function checks(report: VerifyReport): Record<string, string> {
  return Object.fromEntries(report.checks.map((c) => [c.name, c.status]));
}

for (const mode of ['envelope', 'batch'] as const) {
  describe(`proofs from the daemon in ${mode} mode`, () => {
    let relays: DevRelay[] = [];
    let calendars: DevCalendar[] = [];
    let headersFile = '';
    let daemon: Daemon;
    let issuer: Issuer;
    let exporter: ProofExporter;
    const key = generateSecretKey();
    const docs = documents(mode);

    beforeAll(async () => {
      headersFile = join(tempDir('headers'), 'headers.json');
      relays = await startRelays(3);
      calendars = await startCalendars(2, headersFile);
      const config = testConfig({ relays, calendars, headersFile, overrides: { nostr: { mode, batchWindowMs: 300 }, ots: { minCalendars: 2 } } });
      daemon = await startDaemon(config, undefined, key);
      issuer = new Issuer(config);
      exporter = new ProofExporter(issuer.store, { relays: config.nostr.relays, calendars: config.ots.calendars });
      await issuer.enqueueMany(docs.map((d) => ({ data: d.doc, key: d.key })));
    });

    afterAll(async () => {
      await daemon?.stop();
      await issuer?.close();
      await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
    });

    async function verify(d: Doc, confirmed: boolean, doc: unknown = d.doc): Promise<VerifyReport> {
      const proof = await exporter.export(d.key);
      expect(proof, `proof for ${d.key}`).not.toBeNull();
      return verifyAnchor(
        { value: doc, proof },
        { expectedPubkeys: [key.publicKey], headerSource: new HeadersFileSource(headersFile), network: 'regtest', requireConfirmed: confirmed },
      );
    }

    it('PASS before Bitcoin confirmation, with the OTS witness pending', { timeout: 90_000 }, async () => {
      await waitFor('Nostr confirmed and OTS submitted', async () => {
        for (const d of docs) {
          const p = await exporter.export(d.key);
          if (p?.nostr?.status !== 'confirmed' || !p.ots?.proof) return false;
        }
        return true;
      }, 60_000, 200);
      for (const d of docs) {
        const report = await verify(d, false);
        expect(report.verdict, JSON.stringify(report.checks)).toBe('PASS');
        const c = checks(report);
        expect(c).toMatchObject({ input: 'PASS', recompute: 'PASS', envelope: 'PASS', digest: 'PASS', 'nostr-event': 'PASS', signer: 'PASS', 'ots-digest': 'PASS' });
        expect(c[mode === 'batch' ? 'batch-path' : 'nostr-content']).toBe('PASS');
        // Relay acceptance cannot be checked offline: the proof's claim stays a claim.
        expect(report.witnesses.nostr?.verified).toBe('unverified');
        expect(report.witnesses.nostr?.claimed).toBe('confirmed');
        expect(report.witnesses.ots?.verified).toBe('pending');
        expect(report.witnesses.ots?.pending.sort()).toEqual(calendars.map((cal) => cal.url).sort());
      }
    });

    it('PASS after Bitcoin confirmation, the block checked against the regtest headers', { timeout: 90_000 }, async () => {
      await calendars[0]!.mine();
      await calendars[1]!.mine();
      await waitFor('all confirmed', async () => (await issuer.count('confirmed')) === docs.length, 60_000, 200);
      for (const d of docs) {
        const report = await verify(d, true);
        expect(report.verdict, JSON.stringify(report.checks)).toBe('PASS');
        expect(checks(report).bitcoin).toBe('PASS');
        expect(report.witnesses.ots?.verified).toBe('confirmed');
      }
    });

    it('FAIL naming truncation when the anchored workflow loses its last step', async () => {
      const wf = docs[1]!;
      const doc = structuredClone(wf.doc) as { steps: Array<{ receipt_id: string }>; merkle_root: string };
      doc.steps.pop();
      doc.merkle_root = merkleRoot(doc.steps.map((s) => sha256(s.receipt_id))).toString('hex');
      const report = await verify(wf, false, doc);
      expect(report.verdict).toBe('FAIL');
      expect(report.checks.find((c) => c.name === 'envelope')?.detail).toContain('truncated: anchored 5 steps, receipt has 4');
    });
  });
}
