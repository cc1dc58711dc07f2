/**
 * AnchorStore: the durable state of the anchoring, in Redis under one key prefix (one hash
 * tag, so every script may touch any of its keys), read and written by one module per
 * family of keys (StateKeys names them all; layout STATE_SCHEMA, docs/architecture.md):
 * the subjects (their records, history, indexes and counts), the witnesses' batches, the
 * signed Nostr events, and the stream of state changes. This is where they are put together
 * on one connection, and where the layout is opened.
 */
import type { RedisClient as Redis } from '../redis/connection.js';
import { StateKeys } from './keys.js';
import { SubjectStore } from './subjects.js';
import { SubjectIndexes } from './subject-indexes.js';
import { BatchStore } from './batches.js';
import { EventStore, RebuiltEvents } from './events.js';
import { NostrRegistry } from './nostr-registry.js';
import { ChangeStream } from './changes.js';
import { openSchema, type SchemaOpening } from './schema.js';

export class AnchorStore {
  readonly keys: StateKeys;
  readonly redis: Redis;
  /** Every subject's record: accept, reject, witness moves, forget, one subject's reads. */
  readonly subjects: SubjectStore;
  /** The subjects as indexed and counted: list pages, counts, timeline, scans. */
  readonly indexes: SubjectIndexes;
  /** The witnesses' batches: inboxes, cuts, each batch's hash and witness fields, drops. */
  readonly batches: BatchStore;
  /** The signed Nostr events, their relays and reports, a subject's link to its own event. */
  readonly events: EventStore;
  /** The stream of subject state changes and the reconciler's cursors. */
  readonly changes: ChangeStream;
  /** Numbers for relays and signers in event hashes. */
  readonly registry: NostrRegistry;

  constructor(redis: Redis, prefix: string, now: () => number = Date.now) {
    this.redis = redis;
    this.keys = new StateKeys(prefix);
    this.batches = new BatchStore(redis, this.keys, now);
    this.registry = new NostrRegistry(redis, this.keys);
    const rebuilt = new RebuiltEvents();
    this.subjects = new SubjectStore(redis, this.keys, this.batches, now, this.registry, rebuilt);
    this.indexes = new SubjectIndexes(redis, this.keys);
    this.events = new EventStore(redis, this.keys, this.registry, (keys) => this.subjects.envelopes(keys), rebuilt);
    this.changes = new ChangeStream(redis, this.keys);
  }

  /** Checks the layout under the prefix before anything is written (schema.ts, openSchema). */
  openSchema(opts: { write: boolean }): Promise<SchemaOpening> {
    return openSchema(this.redis, this.keys, opts);
  }
}
