/** Envelopes and keys shared by the Nostr witness tests. */
import { canonicalJson } from '../../../src/core/aer1/canonical-json.js';
import { sha256Hex } from '../../../src/core/aer1/hash.js';
import { envelopeEvent, type SignedEvent } from '../../../src/core/nostr/events.js';
import { SigningKey } from '../../../src/core/nostr/keys.js';

export interface EnvelopeFixture {
  canonical: string;
  digestHex: string;
  anchoredAt: string;
}

/** A workflow-close envelope (SPEC §3), different per `n`. */
export function workflowEnvelope(n = 1, anchoredAt = '2025-06-01T12:00:00Z'): EnvelopeFixture {
  const uuid = `0b9f6c1e-5c1a-4b7e-9f1a-${n.toString(16).padStart(12, '0')}`;
  const canonical = canonicalJson({
    type: 'zambo-receipt-anchor/1',
    subject: 'workflow-close',
    receipt_uuid: uuid,
    output_sha256: sha256Hex(`output ${n}`),
    workflow_id: `wf-${n}`,
    merkle_root: sha256Hex(`root ${n}`),
    merkle_version: 'receipt-id-v0',
    step_count: 3,
    anchored_at: anchoredAt,
  });
  return { canonical, digestHex: sha256Hex(canonical), anchoredAt };
}

/** A fixed test key (never used outside tests). */
export const TEST_SECRET_HEX = '5f7d3c2b1a09887766554433221100ffeeddccbbaa99887766554433221100aa';

/** The tests' signing key (from TEST_SECRET_HEX). */
export const TEST_KEY = SigningKey.parse(TEST_SECRET_HEX);

const signed = new Map<number, SignedEvent>();
/** One signed envelope event per n (signing again gives the same id but another signature). */
export function eventFor(n: number): SignedEvent {
  let ev = signed.get(n);
  if (!ev) {
    const env = workflowEnvelope(n);
    ev = envelopeEvent({ canonical: env.canonical, digestHex: env.digestHex }, TEST_KEY);
    signed.set(n, ev);
  }
  return ev;
}
