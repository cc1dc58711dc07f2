/**
 * Moves a shard's sequenced entries from Redis (LogSequencer) into the log's files
 * (LogWriter) and signs a checkpoint: the files first, then Redis is told. A crash between
 * the two, or a Redis that lost writes the files already hold, is settled on the next run
 * from the files: an index inside a signed checkpoint is never handed out again.
 * One publisher a shard (the caller holds the lease).
 */
import { LogFormatError } from '../../core/log/errors.js';
import type { LogSequencer } from './log-sequencer.js';
import type { LogWriter } from './log-writer.js';

/** Most entries one settle hands Redis (a crash leaves at most one checkpoint's worth). */
export const MAX_SETTLE = 100_000;

export interface Published {
  /** The new checkpoint's size and note; null when there was nothing new. */
  readonly checkpoint: { size: number; note: string } | null;
  /** Entries whose index Redis had handed out again after losing writes, sequenced anew. */
  readonly resequenced: number;
  /**
   * Entries of the files whose acceptance Redis had lost (a lost AOF tail after the
   * checkpoint): each keeps its entry; a subject sent again is accepted with the envelope
   * it was logged with (LoggedStamps; docs/log.md, Proofs).
   */
  readonly lost: number;
}

export class LogPublisher {
  constructor(
    private readonly sequencer: LogSequencer,
    private readonly writer: LogWriter,
    private readonly maxEntriesPerCheckpoint = 100_000,
  ) {}

  async publish(): Promise<Published> {
    const files = this.writer.checkpointed.checkpoint.size;
    if (this.writer.size !== files) throw new RangeError(`the writer holds ${this.writer.size - files} entries no checkpoint covers: reopen it`);
    const max = this.maxEntriesPerCheckpoint;
    let { state, tail } = await this.sequencer.read(max);
    if (files < state.published) {
      throw new LogFormatError('log_bad_checkpoint', `the log folder holds ${files} entries, Redis says ${state.published} were published: the folder is behind (restored from an old copy?)`, 'log folder');
    }
    let resequenced = 0;
    let lost = 0;
    if (files > state.published) {
      if (files - state.published > MAX_SETTLE) {
        throw new LogFormatError('log_too_large', `the log folder is ${files - state.published} entries ahead of Redis, over the ${MAX_SETTLE} one settle takes`, 'log folder');
      }
      ({ resequenced, lost } = await this.sequencer.settle(state.published, this.writer.entries(state.published, files)));
      ({ state, tail } = await this.sequencer.read(max));
    }
    if (state.size === state.published) return { checkpoint: null, resequenced, lost };
    for (const entry of tail) this.writer.appendEncoded(entry);
    const note = await this.writer.checkpoint();
    await this.sequencer.markPublished(state.published, state.published + tail.length);
    return { checkpoint: { size: this.writer.size, note }, resequenced, lost };
  }
}
