/**
 * A subject the anchor log holds already, sent again once Redis no longer holds its
 * acceptance (a lost AOF tail after the folder signed its entry; docs/log.md, Proofs). A key is
 * logged once, and its entry keeps the first acceptance's digest `d`; the envelope is the
 * document stamped with `anchored_at` (whole seconds), so the intake gives the subject back
 * the envelope it was logged with: the `anchored_at`, searched second by second over the
 * window the kept checkpoints bound its acceptance to, whose envelope has the entry's `d`.
 * None has it: the document is another root, a conflict.
 * Read-only: Redis's index of key → log index and its published size, and the log's folder.
 */
import type { RedisClient } from '../redis/connection.js';
import { sha256Hex } from '../../core/aer1/hash.js';
import { formatAnchoredAt } from '../../core/envelope/envelope.js';
import type { PreparedSubject } from '../../core/envelope/prepared.js';
import { decodeEntry, entryKindOfSubject } from '../../core/log/entry.js';
import type { LogFolder } from './log-folder.js';
import { MAX_SETTLE } from './log-publisher.js';
import type { LogKeys } from './log-sequencer.js';
import { readLogIndex } from './retired-facts.js';

/** A subject whose key the log holds and Redis does not: its entry's index and `d`, and the `anchored_at` that gives that `d` (null: none does). */
export interface LoggedStamp {
  readonly index: number;
  readonly digest: string;
  readonly anchoredAt: string | null;
}

/** How far before the window's start an `anchored_at` is searched: the intake stamps a page when it reads it, before it is accepted. */
export const STAMP_SLACK_BEFORE_MS = 60_000;
/** And after its end: another daemon's clock. */
export const STAMP_SLACK_AFTER_MS = 5_000;
/** The window's length when the covering checkpoint is among the first two kept. */
export const FIRST_SPAN_MS = 60_000;
/** Most `anchored_at` seconds tried for one subject (one hash each), newest first. */
export const MAX_STAMPS_TRIED = 3600;

const AT_PREFIX = '{"anchored_at":"';
const AT_LENGTH = '2026-01-01T00:00:00Z'.length;

export class LoggedStamps {
  /** The keys of the files' entries Redis has not heard of yet (published … the folder's size), for one such range. */
  private ahead: { published: number; size: number; index: Map<string, number> } | null = null;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: LogKeys,
    private readonly folder: LogFolder,
    /** Per key: whether Redis holds its acceptance. */
    private readonly held: (keys: readonly string[]) => Promise<boolean[]>,
  ) {}

  /** Per subject: null when the log does not hold its key or Redis holds its acceptance, else its entry and stamp. */
  async find(subjects: readonly PreparedSubject[]): Promise<Array<LoggedStamp | null>> {
    const out: Array<LoggedStamp | null> = subjects.map(() => null);
    const checkpoint = subjects.length === 0 ? null : this.folder.checkpoint();
    if (checkpoint === null) return out;
    const replies = await this.redis.multi().hmget(this.keys.index, ...subjects.map((s) => s.key)).get(this.keys.published).exec();
    const failed = replies?.find(([err]) => err);
    if (!replies || failed) throw failed?.[0] ?? new Error('anchor log: the read of the index was discarded');
    const indexes = replies[0]![1] as Array<string | null>;
    // Redis behind the folder (the publisher settles it on its next tick): the files name the keys
    const ahead = this.aheadOf(Number(replies[1]![1] ?? 0), checkpoint.size);
    const logged = subjects.flatMap((s, i) => {
      // a subject retired lean (`<index>:<facts>`) is answered from its facts, not stamped again
      const value = readLogIndex(indexes[i] ?? null);
      if (value?.facts) return [];
      const index = value !== null ? value.index : ahead?.get(s.key);
      return index !== undefined && index < checkpoint.size ? [{ i, index }] : [];
    });
    if (logged.length === 0) return out;
    const held = await this.held(logged.map((l) => subjects[l.i]!.key));
    logged.forEach((l, j) => {
      if (!held[j]) out[l.i] = this.stampOf(subjects[l.i]!, l.index, checkpoint.size);
    });
    return out;
  }

  private aheadOf(published: number, size: number): Map<string, number> | null {
    if (published >= size || size - published > MAX_SETTLE) return null;
    if (this.ahead?.published !== published || this.ahead.size !== size) {
      const index = new Map<string, number>();
      this.folder.entries(published, size).forEach((e, i) => index.set(decodeEntry(e).key, published + i));
      this.ahead = { published, size, index };
    }
    return this.ahead.index;
  }

  /** The subject's entry at `index` (in the checkpoint of `size`) and the `anchored_at` giving its `d`; null when the entry is another key's or holds this envelope already. */
  private stampOf(subject: PreparedSubject, index: number, size: number): LoggedStamp | null {
    const entry = decodeEntry(this.folder.entry(index, size));
    if (entry.key !== subject.key) return null;
    const digest = Buffer.from(entry.digest).toString('hex');
    if (digest === subject.digest) return null;
    const window = this.folder.acceptanceWindow(index, FIRST_SPAN_MS);
    const text = subject.envelopeCanonical;
    if (window === null || entry.kind !== entryKindOfSubject(subject.kind) || !text.startsWith(AT_PREFIX)) return { index, digest, anchoredAt: null };
    // anchored_at is the envelope's first member, always AT_LENGTH characters
    const rest = text.slice(AT_PREFIX.length + AT_LENGTH);
    const top = Math.floor((window.toMs + STAMP_SLACK_AFTER_MS) / 1000);
    const bottom = Math.max(top - MAX_STAMPS_TRIED + 1, Math.floor((window.fromMs - STAMP_SLACK_BEFORE_MS) / 1000));
    for (let s = top; s >= bottom; s--) {
      const at = formatAnchoredAt(new Date(s * 1000));
      if (sha256Hex(AT_PREFIX + at + rest) === digest) return { index, digest, anchoredAt: at };
    }
    return { index, digest, anchoredAt: null };
  }
}
