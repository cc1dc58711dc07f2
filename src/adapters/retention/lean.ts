/**
 * Lean retirement (docs/reliability.md, Retention): with the anchor log on, a confirmed
 * subject whose witnesses attested its log checkpoint — its Nostr batch's checkpoint event
 * accepted, its OpenTimestamps batch confirmed in a Bitcoin block — leaves Redis without
 * handing its proof anywhere: the log folder (its entry, the inclusion path, the checkpoint)
 * and its batches' hashes (the checkpoint event and its relay reports, the calendars' merged
 * timestamp, the block) rebuild the proof, given the few facts kept in its log:idx value
 * (src/adapters/log/retired-facts.ts). A subject is retired lean only when the record its
 * facts give back has every field its proof is built from as its record has it now; any other (an own envelope
 * event, a batch cut from an inbox, claims too long to keep) keeps the archive/webhook rule.
 */
import { envelopeOfCanonical, packEnvelope } from '../../core/envelope/compact.js';
import type { AnchorProof } from '../../core/proof/format.js';
import type { AnchorStore } from '../state/anchor-store.js';
import type { SubjectRecord } from '../state/subject-hash.js';
import { WITNESSES } from '../state/keys.js';
import { packableBatchId, retiredValue, type RetiredFacts } from '../log/retired-facts.js';
import { recordOfFacts } from '../proof/retired.js';

/**
 * The log:idx value `<index>:<facts>` the subject retires lean with, or null when it may not
 * (yet). The exporter builds a proof from a record's key, kind, status, envelope, digest,
 * witness statuses, own event and batch links, and from state shared with the batches and the
 * log folder (ProofExporter.exportOf); so the record the facts give back having the same of
 * each is the proof coming back byte for byte (`test/log/lean-retention.test.ts` compares the
 * bytes served before and after).
 */
export async function leanValue(store: AnchorStore, record: SubjectRecord, proof: AnchorProof): Promise<Buffer | null> {
  const facts = await factsOf(store, record, proof);
  if (facts === null || !proof.log) return null;
  let back: SubjectRecord;
  try {
    back = recordOfFacts(record.key, record.kind!, record.digest!, proof.log.index, facts);
  } catch {
    return null;
  }
  return sameProofInputs(record, back) ? retiredValue(proof.log.index, facts) : null;
}

/** The fields of a record a proof is built from, as one text. */
function proofInputs(r: SubjectRecord): string {
  const witnesses = WITNESSES.map((w) => [w, r.witnesses[w]?.status ?? null, r.batches[w]?.id ?? null, r.batches[w]?.index ?? null]);
  return JSON.stringify([r.key, r.kind, r.status, r.envelopeCanonical, r.digest, r.nostrEventId, witnesses]);
}

function sameProofInputs(a: SubjectRecord, b: SubjectRecord): boolean {
  return proofInputs(a) === proofInputs(b);
}

/** The facts of a logged-and-final subject: every witness confirmed through a checkpoint batch; null for any other. */
async function factsOf(store: AnchorStore, record: SubjectRecord, proof: AnchorProof): Promise<RetiredFacts | null> {
  const index = proof.log?.index;
  if (proof.status !== 'confirmed' || index === undefined || record.nostrEventId !== null || record.kind === null || record.digest === null || record.envelopeCanonical === null) return null;
  if (proof.nostr && (proof.nostr.mode !== 'batch' || proof.nostr.status !== 'confirmed' || !proof.nostr.event)) return null;
  if (proof.ots && (proof.ots.status !== 'confirmed' || !proof.ots.bitcoin || !proof.ots.proof)) return null;
  const batches: RetiredFacts['batches'] = {};
  for (const w of WITNESSES) {
    if (!record.witnesses[w]) continue;
    const link = record.batches[w];
    if (!link || link.index !== index || !packableBatchId(link.id)) return null;
    if (!(await store.batches.batchFields(w, link.id, ['cp'])).cp) return null;
    batches[w] = link.id;
  }
  if (Object.keys(batches).length === 0) return null;
  const envelope = envelopeOfCanonical(record.envelopeCanonical);
  const at = typeof envelope?.anchored_at === 'string' ? Date.parse(envelope.anchored_at) : NaN;
  if (envelope === null || !Number.isSafeInteger(at) || at < 0) return null;
  const claims = packEnvelope(envelope, record.key, at);
  if (claims === null || claims.has('at')) return null;
  return { batches, anchoredAt: at / 1000, claims };
}
