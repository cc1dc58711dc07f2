/**
 * NIP-03 publisher: once an OTS batch with an event tree is confirmed in Bitcoin, signs
 * one kind-1040 event per event id the batch committed to (its `event_ids`: its subjects'
 * envelope events and late ones of earlier batches, src/adapters/ots/event-ids.ts) —
 * `["e", id]`, `["k", kind]`, content = base64 `.ots` of the event id, pruned to one
 * Bitcoin attestation it checks against a block header itself — and hands it to the
 * relay queues. Each attestation is fixed once (a batch field), so a retried or
 * repeated run signs nothing new and relays that already answered are not asked again.
 * The attestations carry no subject: their relay reports never move a subject's witness.
 */
import type { Logger } from 'pino';
import type { AnchorStore } from '../state/anchor-store.js';
import type { NostrWitness } from './nostr-witness.js';
import { BatchTree } from '../../core/batch/batch-tree.js';
import { batchRoot } from '../batch/batch-root.js';
import { parseTimestamp, serializeDetached } from '../../core/ots/codec.js';
import { eventIdProof, eventsRootOf, findNode, joinedRoot, prunedTo } from '../../core/ots/event-tree.js';
import { nip03Event } from '../../core/nostr/nip03.js';
import { serializeEvent, type SignedEvent } from '../../core/nostr/events.js';
import type { SigningKey } from '../../core/nostr/keys.js';
import { verifyBitcoinAttestation, type HeaderSource } from '../bitcoin/index.js';
import { bitcoinAttestations } from '../../core/ots/timestamp.js';
import type { BitcoinNetwork } from '../../core/bitcoin/header.js';

export class Nip03Publisher {
  constructor(
    private readonly store: AnchorStore,
    private readonly nostr: NostrWitness,
    private readonly key: SigningKey,
    private readonly log: Logger,
    /** Where block headers come from (the OTS witness's source) and which network. */
    private readonly headers: HeaderSource,
    private readonly network: BitcoinNetwork,
  ) {}

  /** Publishes the batch's attestations; returns how many events were handed to the relays. */
  async publishBatch(batchId: string): Promise<number> {
    const fields = await this.store.batches.otsNip03State(batchId);
    if (fields.done || !fields.eventsRoot || !fields.bitcoin || !fields.ts) return 0;
    const batch = await this.store.batches.getBatch('ots', batchId);
    if (!batch) return 0;
    const bitcoin = JSON.parse(fields.bitcoin) as { height: number; time?: number };
    const subjectsRoot = batchRoot(batch);
    // the list fixed with events_root (event_ids is written with it, so one without the other is a hand edit)
    const eventIds = (await this.store.batches.otsEventIds(batchId)) ?? [];
    const ids = eventIds.map((e) => Buffer.from(e, 'hex'));
    const eventsRoot = eventsRootOf(ids);
    if (!eventsRoot || eventsRoot.toString('hex') !== fields.eventsRoot) {
      // Only a state edited by hand gets here: never sign a proof that does not hold.
      this.log.error({ batchId }, 'NIP-03: the batch\'s event ids no longer give its events_root; no attestations published');
      await this.store.batches.finishOtsNip03(batchId, 'event ids do not match events_root');
      return 0;
    }
    const ts = parseTimestamp(Buffer.from(fields.ts, 'base64'), subjectsRoot);
    const joined = findNode(ts, joinedRoot(subjectsRoot, eventsRoot));
    if (!joined) throw new Error(`NIP-03: batch ${batchId} has no joined root in its timestamp`);
    // The attestation kept is one checked against a block header again here: any calendar may
    // have added one at the same height that does not hold, and we publish only one.
    let verified: Buffer | null = null;
    for (const att of bitcoinAttestations(joined)) {
      if (att.height !== bitcoin.height) continue;
      try {
        await verifyBitcoinAttestation(att.merkleRoot, att.height, this.headers, this.network);
        verified = att.merkleRoot;
        break;
      } catch {
        // not this one
      }
    }
    const single = verified ? prunedTo(joined, (a, msg) => a.kind === 'bitcoin' && a.height === bitcoin.height && msg.equals(verified)) : null;
    if (!single) throw new Error(`NIP-03: no Bitcoin attestation at height ${bitcoin.height} under the joined root of batch ${batchId} checks out`);

    const events = new BatchTree(ids);
    let sent = 0;
    for (let i = 0; i < ids.length; i++) {
      const eventId = eventIds[i]!;
      const done = await this.store.batches.otsNip03Attestation(batchId, eventId);
      if (done) {
        // signed by an earlier run: make sure it is on its way, sign nothing new
        await this.nostr.ensurePublishing(done);
        sent++;
        continue;
      }
      // gone, or a subject event that no longer rebuilds (its relays' drains record why): not attested, the rest are
      const [read] = await this.store.events.readEvents([eventId], [[]]);
      const target = read && 'json' in read.event ? read.event.json : null;
      if (!target) continue;
      const kind = (JSON.parse(target) as SignedEvent).kind;
      const ots = serializeDetached(eventIdProof(events, ids[i]!, i, subjectsRoot, single));
      const candidate = nip03Event({ eventId, eventKind: kind, ots, createdAt: Math.floor(Date.now() / 1000) }, this.key);
      // The first attestation signed for this event is the one published, across retries and
      // daemons: its JSON is stored before its id is named in the batch, so the id named
      // always has its JSON. (A candidate that lost the race stays stored, unpublished.)
      await this.store.events.storeEvent(candidate.id, serializeEvent(candidate), {});
      const chosen = await this.store.batches.fixOtsNip03Attestation(batchId, eventId, candidate.id);
      await this.nostr.ensurePublishing(chosen);
      sent++;
    }
    await this.store.batches.finishOtsNip03(batchId);
    this.log.info({ batchId, events: sent, height: bitcoin.height }, 'NIP-03 attestations handed to the relays');
    return sent;
  }
}
