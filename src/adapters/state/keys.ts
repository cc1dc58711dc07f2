/**
 * Every Redis key the daemon writes, in one place. All keys share one hash tag
 * (`{prefix}`) so they live in one Redis Cluster slot and Lua scripts may touch any of them.
 */
import { shardPrefix } from '../../core/shard/shard.js';

export type WitnessName = 'nostr' | 'ots';
export const WITNESSES: readonly WitnessName[] = ['nostr', 'ots'];

export class StateKeys {
  readonly base: string;

  constructor(prefix: string) {
    this.base = `{${prefix}}`;
  }

  /**
   * The keys of shard `shard` of `shards`: one shard is today's layout exactly (`{prefix}`);
   * K shards are K hash tags `{prefix:0}` … `{prefix:K-1}`, which a Redis Cluster spreads
   * over its masters. A subject's shard is `shardOf(key, K)` (src/core/shard/shard.ts).
   */
  static forShard(prefix: string, shard: number, shards: number): StateKeys {
    return new StateKeys(shardPrefix(prefix, shard, shards));
  }

  /** Prefix handed to BullMQ so its keys share the hash tag. */
  get bullPrefix(): string {
    return this.base;
  }

  subject(key: string): string {
    return `${this.base}:s:${key}`;
  }
  /** The envelope's canonical text, apart from the subject hash so that hash stays a compact listpack. */
  envelope(key: string): string {
    return `${this.base}:e:${key}`;
  }
  /** Every subject of one overall status, scored by acceptance time: a subject's one index membership once settled. */
  byStatus(status: string): string {
    return `${this.base}:idx:st:${status}`;
  }
  /**
   * The subjects whose witness is in `status`, scored by acceptance time, for pending, partial
   * and failed (the reconciler's working sets); `confirmed` is not kept (a confirmed witness is
   * counted in `counts`, and its subjects found through idx:st:confirmed and :partial).
   */
  byWitness(witness: string, status: string): string {
    return `${this.base}:idx:w:${witness}:${status}`;
  }
  /** Subjects per overall status (`st:<status>`) and per witness status (`w:<witness>:<status>`). */
  get counts(): string {
    return `${this.base}:counts`;
  }
  get events(): string {
    return `${this.base}:events`;
  }
  /**
   * The events stream's tally (stream-lib.lua): the running count of subject events added
   * (member `~total`) and marks by which the stream is trimmed to about `maxlen` subject events.
   */
  get eventTally(): string {
    return `${this.base}:events:n`;
  }
  event(id: string): string {
    return `${this.base}:ev:${id}`;
  }
  /**
   * Numbers for what event hashes would otherwise repeat (nostr-registry.ts): relays
   * (`u:<url>` → n, `u#<n>` → url) and signers (`s:<pubkey>:<kind>` → n, `s#<n>` → the same),
   * the next number under `u#` and `s#`. Numbers are never reused or changed.
   */
  get nostrRegistry(): string {
    return `${this.base}:nostr:reg`;
  }
  inbox(witness: WitnessName): string {
    return `${this.base}:inbox:${witness}`;
  }
  batch(witness: WitnessName, id: string): string {
    return `${this.base}:b:${witness}:${id}`;
  }
  /** The batch's witness transitions, one JSON entry each (its subjects' history is derived from it). */
  batchHistory(witness: WitnessName, id: string): string {
    return `${this.base}:bh:${witness}:${id}`;
  }
  batchKeys(witness: WitnessName, id: string): string {
    return `${this.base}:bk:${witness}:${id}`;
  }
  batchSeq(witness: WitnessName): string {
    return `${this.base}:bseq:${witness}`;
  }
  /** Nostr auto mode: events queued for the relays, scored by when (ms), trimmed to the horizon. */
  get nostrRecent(): string {
    return `${this.base}:nostr:recent`;
  }
  /**
   * Relay upkeep's walk (src/adapters/nostr/upkeep-state.ts): every event handed to the
   * relays, in the order first handed over, as chunks of 32-byte ids (kept-lib.lua).
   */
  get nostrKept(): string {
    return `${this.base}:nostr:kept`;
  }
  /** The numbers of the chunks relay upkeep's walk holds, a sorted set scored by number (kept-lib.lua). */
  get nostrKeptChunks(): string {
    return `${this.base}:nostr:kept:c`;
  }
  /** NIP-03: envelope event ids that came after their OTS batch fixed its event tree, scored by when (ms); a later batch commits them. */
  get nip03Late(): string {
    return `${this.base}:ots:nip03:late`;
  }
  /**
   * Batches none of whose subjects is left in Redis (each one's `gone` reached its `size`,
   * forget.lua): dropped with everything of theirs by drop-batch.lua once no work is left.
   */
  emptiedBatches(witness: WitnessName): string {
    return `${this.base}:bfree:${witness}`;
  }
  /**
   * Confirmed OTS batches with work left after their subjects' confirmation: upgrade polls of
   * calendars still pending, NIP-03 attestations not yet published. The reconciler walks it.
   */
  batchesWithWork(witness: WitnessName): string {
    return `${this.base}:bwork:${witness}`;
  }
  /**
   * With the anchor log on: the log size up to which a witness's batches were cut from the
   * log's checkpoints (cut-checkpoint.lua); entries from here on wait for the next cut.
   */
  checkpointCut(witness: WitnessName): string {
    return `${this.base}:bcut:${witness}`;
  }
  /** Batches cut but not yet handed to their witness (resumed on restart). */
  openBatches(witness: WitnessName): string {
    return `${this.base}:bopen:${witness}`;
  }
  /** The layout version of everything under this prefix (AnchorStore.openSchema). */
  get schema(): string {
    return `${this.base}:schema`;
  }
  /**
   * Keys only the development layout before `:schema` existed wrote (an index of every
   * subject, and one of each witness's confirmed subjects): what AnchorStore.openSchema
   * refuses on a prefix without `:schema`. Never written.
   */
  get unnumberedLayoutKeys(): string[] {
    return [`${this.base}:idx:all`, `${this.base}:idx:w:nostr:confirmed`, `${this.base}:idx:w:ots:confirmed`];
  }
  /** Written with a short expiry by `/readyz`: does Redis take writes? */
  get probe(): string {
    return `${this.base}:probe`;
  }

  /** The reconciler's scan cursors, one field per index it walks. */
  get reconcile(): string {
    return `${this.base}:reconcile`;
  }
  /**
   * One minute of the timeline (`minute`: ms since the epoch / 60000): confirmations per
   * witness and per subject, and their summed and longest time to confirm. Expires after 2 h.
   */
  timeline(minute: number): string {
    return `${this.base}:tl:${minute}`;
  }
  /** Last confirmation time per witness, counters. */
  get meta(): string {
    return `${this.base}:meta`;
  }
}
