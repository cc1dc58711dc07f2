/**
 * With the anchor log on (docs/log.md, "Witnessing checkpoints"), the batches of the Nostr and
 * OpenTimestamps witnesses are cut from the log instead of from their inboxes: a batch holds
 * the subjects whose entries lie between where the witness's last checkpoint cut stopped and
 * the size of a signed checkpoint, and its root is that checkpoint's root. The cut is one
 * script call (cut-checkpoint.lua) over entries read from the log's files, which no longer
 * change once a checkpoint covers them; the cursor in Redis makes a range cut once, so a
 * crash between a checkpoint and its cut is settled by the next cut, nothing lost or doubled.
 */
import { randomBytes } from 'node:crypto';
import { formatAnchoredAt } from '../../core/envelope/envelope.js';
import { decodeEntry } from '../../core/log/entry.js';
import type { LogFolder } from '../log/log-folder.js';
import type { LogKeys } from '../log/log-sequencer.js';
import type { AnchorStore } from './anchor-store.js';
import type { WitnessName } from './keys.js';
import { DIR, defineScripts, load, runScript } from './scripts.js';

/** Cuts a batch whose root is a signed checkpoint's, from the log's entries. */
export const CUT_CHECKPOINT = load(DIR, 'cut-checkpoint');

/** Kept checkpoints looked at when choosing the largest that fits a batch (bounds a cut's file reads). */
const SIZES_LOOKED_AT = 64;
/** Script proposals per cut: each loses only to another daemon's cut that landed first, or skips a range with nothing to take. */
const TRIES = 32;

export class CheckpointCuts {
  /** The entries of the last range read (immutable once a checkpoint covers them): each witness cuts the same ranges. */
  private last: { from: number; to: number; entries: Array<{ index: number; key: string; digest: Uint8Array }> } | null = null;

  constructor(
    private readonly store: AnchorStore,
    private readonly folder: LogFolder,
    private readonly logKeys: LogKeys,
    private readonly now: () => number = Date.now,
  ) {
    defineScripts(store.redis, [CUT_CHECKPOINT]);
  }

  /** The entries [from, to) from the log's files, decoded; the last range is kept for the next witness's cut. */
  private entries(from: number, to: number): Array<{ index: number; key: string; digest: Uint8Array }> {
    if (this.last?.from === from && this.last.to === to) return this.last.entries;
    const entries = this.folder.entries(from, to).map((bytes, i) => ({ index: from + i, ...decodeEntry(bytes, `entry ${from + i}`) }));
    this.last = { from, to, entries };
    return entries;
  }

  /** Where the witness's checkpoint cuts stopped: the entries from here on are not cut yet. */
  async cursor(witness: WitnessName): Promise<number> {
    return Number((await this.store.redis.get(this.store.keys.checkpointCut(witness))) ?? 0);
  }

  /** Entries a signed checkpoint covers that no batch of the witness took yet. */
  async waiting(witness: WitnessName): Promise<number> {
    const cp = this.folder.checkpoint();
    return cp === null ? 0 : Math.max(0, cp.size - (await this.cursor(witness)));
  }

  /** Entries sequenced that no signed checkpoint covers yet (the next checkpoint will). */
  async unsigned(): Promise<number> {
    const sequenced = Number((await this.store.redis.get(this.logKeys.size)) ?? 0);
    return Math.max(0, sequenced - (this.folder.checkpoint()?.size ?? 0));
  }

  /**
   * True when a checkpoint cut of the witness is still to reach the subject's entry (the
   * reconciler leaves such a subject out of the inbox: it is on its way).
   */
  async ahead(witness: WitnessName, key: string): Promise<boolean> {
    const [raw, cursor] = await Promise.all([this.store.redis.hget(this.logKeys.index, key), this.cursor(witness)]);
    return raw !== null && Number(raw) >= cursor;
  }

  /**
   * Cuts the next batch: the subjects of the entries from the cursor up to the largest kept
   * checkpoint that adds at most `max` entries (a single checkpoint adding more is taken
   * whole, so no two batches share a checkpoint). Null when no checkpoint covers anything new.
   */
  async cut(witness: WitnessName, max: number): Promise<{ id: string; size: number } | null> {
    const k = this.store.keys;
    for (let attempt = 0; attempt < TRIES; attempt++) {
      const [[cerr, cursorText], [serr, seqText]] = ((await this.store.redis.pipeline().get(k.checkpointCut(witness)).get(k.batchSeq(witness)).exec()) ?? []) as Array<[Error | null, string | null]> as [[Error | null, string | null], [Error | null, string | null]];
      if (cerr) throw cerr;
      if (serr) throw serr;
      const from = Number(cursorText ?? 0);
      const current = this.folder.checkpoint();
      if (current === null || current.size <= from) return null;
      let to = current.size;
      if (to - from > max) {
        const fitting = this.folder.sizesAfter(from, SIZES_LOOKED_AT).filter((s) => s - from <= max);
        to = fitting.at(-1) ?? this.folder.sizesAfter(from, 1)[0] ?? current.size;
      }
      const cp = to === current.size ? current : this.folder.checkpointCovering(to - 1);
      if (cp === null || cp.size !== to) throw new Error(`anchor log: no kept checkpoint of size ${to} in ${this.folder.dir}`);
      const entries = this.entries(from, to);
      const seq = Number(seqText ?? 0) + 1;
      const id = `${seq}-${randomBytes(6).toString('hex')}`;
      const now = this.now();
      const keys = [k.checkpointCut(witness), k.batchSeq(witness), k.openBatches(witness), k.batch(witness, id), k.batchKeys(witness, id), ...entries.map((e) => k.subject(e.key))];
      const args: Array<string | number | Buffer> = [witness, now, formatAnchoredAt(new Date(now)), id, seq, from, to, cp.note];
      for (const e of entries) args.push(e.key, Buffer.from(e.digest), e.index);
      const res = (await runScript(this.store.redis, CUT_CHECKPOINT, keys, args)) as [string, number] | null;
      if (res === null) continue;
      if (res[0] === 'retry') continue;
      return { id: String(res[0]), size: Number(res[1]) };
    }
    return null;
  }
}
