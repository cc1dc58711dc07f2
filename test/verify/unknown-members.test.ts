/**
 * Members a proof does not define are never read (a newer exporter may add some): the
 * `input` line names them, non-ASCII escaped, so a look-alike key (`"nоstr"`, Cyrillic о)
 * that hides a forged witness is visible to whoever reads the report; it never counts.
 */
import { describe, expect, it } from 'vitest';
import { verifyAnchor } from '../../src/core/verify/pipeline.js';
import { KEY, OTHER_KEY, attach, envelopeModeProof, receiptNumber, type Json } from './build-proofs.js';

describe('unknown members of a proof', () => {
  it('names a look-alike nostr key in the input line, escaped; the forged witness under it is not reported', async () => {
    const doc = receiptNumber(1401);
    const { proof } = envelopeModeProof(doc, { mineAt: 401 });
    const forged = envelopeModeProof(doc, { key: OTHER_KEY, noOts: true }).proof.nostr;
    const { nostr: _genuine, ...rest } = proof;
    const hostile: Json = { ...rest, ['n\u043estr']: forged };
    const report = await verifyAnchor({ value: attach(doc, hostile) }, { expectedPubkeys: [KEY.publicKey] });
    const input = report.checks.find((c) => c.name === 'input')!;
    expect(input.status).toBe('PASS');
    expect(input.detail).toContain('; not read (members this verifier does not know): anchor_proof."n\\u043estr"');
    expect(report.witnesses.nostr).toBeNull();
  });

  it('names unknown members of nostr and ots too, a few and a count', async () => {
    const doc = receiptNumber(1402);
    const { proof } = envelopeModeProof(doc);
    const p = JSON.parse(JSON.stringify(proof)) as Json;
    Object.assign(p.nostr as Json, { ['ev\u0435nt']: {}, a: 1, b: 2, c: 3 });
    Object.assign(p.ots as Json, { ['pr\u043e\u043ef']: 'x' });
    const report = await verifyAnchor({ value: attach(doc, p) }, { expectedPubkeys: [KEY.publicKey] });
    const input = report.checks.find((c) => c.name === 'input')!;
    expect(input.detail).toMatch(/; not read \(members this verifier does not know\): anchor_proof\.nostr\."ev\\u0435nt", anchor_proof\.nostr\."a", anchor_proof\.nostr\."b" and 2 more$/);
  });

  it('says nothing for a proof as the daemon exports it', async () => {
    const doc = receiptNumber(1403);
    const { proof } = envelopeModeProof(doc);
    const report = await verifyAnchor({ value: attach(doc, proof) });
    expect(report.checks.find((c) => c.name === 'input')!.detail).not.toContain('not read');
  });
});
