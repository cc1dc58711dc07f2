/**
 * Lean retirement (docs/reliability.md, Retention): with the anchor log on, a confirmed
 * subject whose witnesses attested its log checkpoint — its Nostr batch's checkpoint event
 * accepted, its OpenTimestamps batch confirmed in a Bitcoin block — leaves Redis without
 * handing its proof anywhere: the log folder (its entry, the inclusion path, the checkpoint)
 * and its batches' hashes (the checkpoint event and its relay reports, the calendars' merged
 * timestamp, the block) rebuild the proof, given the few facts kept in its log:idx value
 * (src/adapters/log/retired-facts.ts). A subject is retired lean only when the proof its
 * facts rebuild is byte for byte the proof its record gives now; any other (an own envelope
 * event, a batch cut from an inbox, claims too long to keep) keeps the archive/webhook rule.
 */
import { envelopeOfCanonical, packEnvelope } from '../../core/envelope/compact.js';
import type { AnchorProof } from '../../core/proof/format.js';
import type { AnchorStore } from '../state/anchor-store.js';
import type { SubjectRecord } from '../state/subject-hash.js';
import { WITNESSES } from '../state/keys.js';
import { packableBatchId, retiredValue, type RetiredFacts } from '../log/retired-facts.js';
import type { ProofExporter } from '../proof/export.js';
import { recordOfFacts } from '../proof/retired.js';

/** The log:idx value `<index>:<facts>` the subject retires lean with, or null when it may not (yet). */
export async function leanValue(store: AnchorStore, exporter: ProofExporter, record: SubjectRecord, proof: AnchorProof): Promise<Buffer | null> {
  const facts = await factsOf(store, record, proof);
  if (facts === null || !proof.log) return null;
  let rebuilt: AnchorProof | null;
  try {
    rebuilt = await exporter.exportOf(recordOfFacts(record.key, record.kind!, record.digest!, proof.log.index, facts));
  } catch {
    return null;
  }
  // only a subject whose proof comes back byte for byte
  if (rebuilt === null || JSON.stringify(rebuilt) !== JSON.stringify(proof)) return null;
  return retiredValue(proof.log.index, facts);
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
