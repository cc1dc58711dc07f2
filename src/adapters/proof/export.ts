/**
 * Builds a subject's `aer1-anchor-proof-v1` from the daemon's state: its envelope, the
 * signed Nostr event (its own envelope event, or its batch's event with the inclusion path;
 * `nostr.mode` says which, as recorded on its batch in auto mode), and its own detached
 * `.ots` (file digest = the envelope digest) assembled from the batch's root timestamp. A
 * batch cut from the anchor log has a checkpoint's root: its event is the checkpoint event,
 * and the path runs from the subject's log entry through the log's tree (docs/log.md).
 */
import { BatchTree } from '../../core/batch/batch-tree.js';
import { batchCheckpoint, type BatchCheckpoint } from '../batch/batch-root.js';
import type { AnchorStore } from '../state/anchor-store.js';
import type { ProofBatchFields } from '../state/batch-fields.js';
import type { SubjectRecord } from '../state/subject-hash.js';
import type { WitnessName } from '../state/keys.js';
import { parseTimestamp, serializeDetached } from '../../core/ots/codec.js';
import { proofForSubject } from '../../core/ots/batch-proof.js';
import type { CalendarState } from '../ots/ots-witness.js';
import { relayCopyJson } from '../nostr/relay-policy.js';
import { sentTo } from '../state/subject-view.js';
import { LogFolder } from '../log/log-folder.js';
import { LogKeys } from '../log/log-sequencer.js';
import { readLogIndex } from '../log/retired-facts.js';
import { retiredSubject, retiredSubjects, type RetiredSubject } from './retired.js';
import { archivedSummary, type ArchivedAnchor } from '../archive/proof-archive.js';
import { decodeBundle, TILE_WIDTH, tileInTree } from '../../core/log/tiles.js';
import { encodeEntry, entryKindOfSubject } from '../../core/log/entry.js';
import { PROOF_VERSION, type LogProof, type AnchorProof, type NostrEventJson, type NostrProof, type NostrProofMode, type OtsProof, type WitnessStatus } from '../../core/proof/format.js';

/**
 * The relays and calendars of the config in force (`configuredSources`). A proof lists
 * where a subject was sent by the rule of the subject view (`sentTo` in
 * src/adapters/state/subject-view.ts): from state; these only while the sending is not
 * over (no event handed to a relay, a batch not yet submitted), as what it waits for.
 */
export interface ProofSources {
  relays: readonly string[];
  calendars: readonly string[];
}

/**
 * What a proof takes from a subject's batch: the tree the witnesses attest (the batch's tree
 * over its digests, or, for a batch cut from the anchor log, the log's tree at its
 * checkpoint's size, in which a subject's place is its log index), and the batch's fields.
 */
interface CachedBatch {
  size: number;
  root: Buffer;
  path: (index: number) => Buffer[];
  checkpoint: BatchCheckpoint | null;
  fields: ProofBatchFields;
}

/** Recent batch trees: a batch's digests never change, so its tree is built once. */
class TreeCache {
  private readonly trees = new Map<string, BatchTree>();
  constructor(private readonly max = 8) {}
  async get(id: string, load: () => Promise<Buffer[] | null>): Promise<BatchTree | null> {
    let tree = this.trees.get(id);
    if (tree) {
      this.trees.delete(id);
    } else {
      const digests = await load();
      if (!digests) return null;
      tree = new BatchTree(digests);
    }
    this.trees.set(id, tree);
    while (this.trees.size > this.max) this.trees.delete(this.trees.keys().next().value!);
    return tree;
  }
}

/** What `GET /v1/anchors/{key}` answers for a subject retired lean: its summary, `retired: 'log'` and its log index. */
export interface RetiredAnchor extends Omit<ArchivedAnchor, 'archived'> {
  retired: 'log';
  logIndex: number;
}

export class ProofExporter {
  private readonly store: AnchorStore;
  private readonly sources: ProofSources;
  private readonly trees = new TreeCache();

  private readonly logFolder: LogFolder | null;
  private readonly logKeys: LogKeys;

  /** `anchorLog`: the shard's anchor log folder (log.enabled), whose checkpoint and tiles give `log`. */
  constructor(store: AnchorStore, sources: ProofSources, anchorLog: { dir: string } | null = null) {
    this.store = store;
    this.sources = sources;
    this.logFolder = anchorLog ? new LogFolder(anchorLog.dir) : null;
    this.logKeys = new LogKeys(store.keys.base);
  }

  /**
   * The subject in the anchor log, once a checkpoint covers it: null before, when the log is
   * off, or when its key was logged with another digest (a key is logged once; the intake
   * gives a subject sent again the envelope it was logged with: LoggedStamps).
   */
  private async log(record: SubjectRecord): Promise<LogProof | null> {
    const kind = record.kind === null ? undefined : entryKindOfSubject(record.kind);
    if (!this.logFolder || !record.digest || kind === undefined) return null;
    const value = readLogIndex(await this.store.redis.hget(this.logKeys.index, record.key));
    if (value === null) return null;
    const index = value.index;
    const cp = this.logFolder.checkpointCovering(index);
    if (cp === null) return null;
    const ref = { ...tileInTree(cp.size, 0, Math.floor(index / TILE_WIDTH)), level: 'entries' as const };
    const bundle = this.logFolder.tile(ref, cp.size);
    const entry = bundle === null ? null : decodeBundle(bundle, ref)[index % TILE_WIDTH];
    if (!entry?.equals(encodeEntry({ digest: Buffer.from(record.digest, 'hex'), kind, key: record.key }))) return null;
    const timestamps = this.logFolder.timestamps(cp.size);
    return {
      origin: cp.origin,
      index,
      checkpoint: cp.note,
      path: this.logFolder.inclusion(index, cp.size).map((h) => h.toString('hex')),
      ...(timestamps.length > 0 ? { timestamps } : {}),
    };
  }

  /**
   * A subject retired lean (docs/reliability.md, Retention): its record rebuilt from its
   * log:idx facts and its log entry, and its log index; null when `key` is none (the log off,
   * the subject in Redis, unknown).
   */
  async retired(key: string): Promise<RetiredSubject | null> {
    return this.logFolder ? retiredSubject(this.store.redis, this.logKeys, this.logFolder, key) : null;
  }

  /** What GET answers for a subject retired lean (the summary of its rebuilt proof), or null when `key` is none. */
  async retiredAnchor(key: string): Promise<RetiredAnchor | null> {
    const retired = await this.retired(key);
    const proof = retired ? await this.exportOf(retired.record) : null;
    if (!retired || !proof) return null;
    const { archived: _archived, ...summary } = archivedSummary(key, proof);
    return { ...summary, retired: 'log', logIndex: retired.index };
  }

  /** retired() of many keys, their log:idx values read in one round trip. */
  async retiredMany(keys: readonly string[]): Promise<Array<RetiredSubject | null>> {
    return this.logFolder ? retiredSubjects(this.store.redis, this.logKeys, this.logFolder, keys) : keys.map(() => null);
  }

  /** The proof for `key` (in Redis, or retired lean), or null when no accepted subject has that key. */
  async export(key: string): Promise<AnchorProof | null> {
    const record = (await this.store.subjects.getRecord(key)) ?? (await this.retired(key))?.record ?? null;
    return record ? this.exportOf(record) : null;
  }

  /** The proof of a subject's record as read (or as its retired facts give it). */
  async exportOf(record: SubjectRecord): Promise<AnchorProof | null> {
    if (record.status === 'rejected' || !record.envelopeCanonical || !record.digest) return null;
    const proof: AnchorProof = {
      version: PROOF_VERSION,
      envelope: JSON.parse(record.envelopeCanonical) as Record<string, unknown>,
      digest: record.digest,
      status: record.status,
    };
    if (record.witnesses.nostr) proof.nostr = await this.nostr(record, record.witnesses.nostr.status);
    if (record.witnesses.ots) proof.ots = await this.ots(record, record.witnesses.ots.status);
    const log = await this.log(record);
    if (log) proof.log = log;
    return proof;
  }

  /** The batch's tree (cached) and its current fields (read fresh: answers and upgrades change them). */
  private async tree(witness: WitnessName, id: string): Promise<CachedBatch | null> {
    const [own, fields] = await Promise.all([this.store.batches.batchFields(witness, id, ['cp', 'note']), this.store.batches.proofBatchFields(witness, id)]);
    const checkpoint = batchCheckpoint(own);
    if (checkpoint) {
      const folder = this.logFolder;
      if (!folder) return null;
      return { size: checkpoint.size, root: checkpoint.root, path: (index) => folder.inclusion(index, checkpoint.size), checkpoint, fields };
    }
    // a batch decided `envelope` keeps no digests once its subjects have their own events: no tree
    const tree = await this.trees.get(`${witness}:${id}`, async () => {
      const digests = (await this.store.batches.getBatch(witness, id))?.digests;
      return digests && digests.length > 0 ? digests : null;
    });
    return tree ? { size: tree.size, root: tree.root, path: (index) => tree.path(index), checkpoint: null, fields } : null;
  }

  private async nostr(record: SubjectRecord, status: WitnessStatus): Promise<NostrProof> {
    let eventJson: string | null = null;
    let batch: NostrProof['batch'];
    let mode: NostrProofMode | undefined;
    const link = record.batches.nostr;
    if (record.nostrEventId) {
      mode = 'envelope';
      eventJson = await this.store.events.eventJson(record.nostrEventId);
    } else if (link) {
      const b = await this.tree('nostr', link.id);
      // A batch decided `envelope` whose subject is not signed yet: envelope, no event yet (its digests may be gone: no tree).
      const fields = b?.fields ?? (await this.store.batches.proofBatchFields('nostr', link.id));
      if (fields.mode === 'envelope') mode = 'envelope';
      else if (b && (b.fields.mode === 'batch' || b.fields.event)) {
        mode = 'batch';
        eventJson = b.fields.event ?? null;
        batch = { index: link.index, size: b.size, path: b.path(link.index).map((h) => h.toString('hex')) };
      }
    }
    const event = eventJson ? (JSON.parse(eventJson) as NostrEventJson) : null;
    const sent = event ? await this.store.events.eventRelays(event.id) : { relays: [], reports: [] };
    const reports = sent.reports;
    // where the event was sent (from state), not the config in force: the rule of the subject view
    const urls = sentTo(sent.relays, this.sources.relays, sent.relays.length > 0);
    const relays = await Promise.all(urls.map(async (url) => {
      const r = reports.find((x) => x.url === url);
      // a relay that was sent a copy (NIP-13 proof of work, re-dated) holds that copy: the proof carries it
      const copy = r?.copyId && event ? await relayCopyJson(this.store, event.id, url) : null;
      const copied = copy ? (JSON.parse(copy) as NostrEventJson) : null;
      return { url, status: r?.status ?? 'pending', message: r?.message ?? '', at: r?.at ?? '', ...(copied && copied.id === r?.copyId ? { event: copied } : {}) };
    }));
    return { status, ...(mode ? { mode } : {}), event, relays, ...(batch ? { batch } : {}) };
  }

  private async ots(record: SubjectRecord, status: WitnessStatus): Promise<OtsProof> {
    const link = record.batches.ots;
    const b = link ? await this.tree('ots', link.id) : null;
    // the calendars the batch went to (from state); until it is submitted, also those it will go to: the rule of the subject view
    const recorded = b ? Object.keys(b.fields.calendars) : [];
    const urls = sentTo(recorded, this.sources.calendars, b?.fields.submitted === true);
    const calendars = urls.map((url) => {
      const raw = b?.fields.calendars[url];
      return { url, status: raw ? (JSON.parse(raw) as CalendarState).status : 'unsubmitted' };
    });
    const out: OtsProof = { status, proof: null, calendars };
    if (!b || !link || !b.fields.ts || !record.digest) return out;
    const rootTs = parseTimestamp(Buffer.from(b.fields.ts, 'base64'), b.root);
    // a log batch's leaf is the subject's entry, d ‖ kind ‖ key: the .ots appends kind ‖ key to d
    const kind = record.kind === null ? undefined : entryKindOfSubject(record.kind);
    const suffix = b.checkpoint && kind !== undefined ? encodeEntry({ digest: Buffer.from(record.digest, 'hex'), kind, key: record.key }).subarray(32) : undefined;
    if (b.checkpoint && suffix === undefined) return out;
    const file = proofForSubject(Buffer.from(record.digest, 'hex'), link.index, b.size, b.path(link.index), rootTs, suffix);
    out.proof = serializeDetached(file).toString('base64');
    if (b.fields.bitcoin && status === 'confirmed') out.bitcoin = JSON.parse(b.fields.bitcoin) as OtsProof['bitcoin'] & object;
    return out;
  }
}
