/**
 * One shard's anchor log in the daemon (log.enabled, docs/log.md): accept.lua sequences the
 * subjects into Redis (SubjectStore.logKeys); this service moves them into the log's files
 * and signs a checkpoint at most every log.checkpointIntervalMs while there are new entries.
 * One daemon publishes a shard at a time: it holds a lease in Redis (`<base>:log:lease`,
 * renewed each tick); another daemon takes over only once the lease has expired, and then
 * reopens the folder (which must be the same log: a folder behind Redis is refused).
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { RedisClient } from '../redis/connection.js';
import type { LogSigner } from '../../core/log/note.js';
import { LogPublisher } from './log-publisher.js';
import { LogKeys, LogSequencer } from './log-sequencer.js';
import { LogWriter } from './log-writer.js';

/** Takes or renews the lease: KEYS[1] the lease, ARGV[1] holder, ARGV[2] ms. 1 when held. */
const LEASE = `local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
return 1`;
/** Lets the lease go when still ours. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export interface LogServiceOptions {
  readonly dir: string;
  readonly origin: string;
  readonly signer: LogSigner;
  readonly intervalMs: number;
  /** The shard's key base (`{prefix}`), the hash tag the log's keys share. */
  readonly base: string;
}

type Script = (...args: (string | number)[]) => Promise<unknown>;

export class LogService {
  readonly keys: LogKeys;
  readonly sequencer: LogSequencer;
  private readonly holder = randomBytes(12).toString('hex');
  private writer: LogWriter | null = null;
  private held = false;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = false;
  private lastError = '';

  constructor(
    private readonly redis: RedisClient,
    readonly options: LogServiceOptions,
    private readonly log: Logger,
  ) {
    this.keys = new LogKeys(options.base);
    this.sequencer = new LogSequencer(redis as never, this.keys);
    const commands = redis as unknown as Record<string, unknown>;
    if (typeof commands.aer1_log_lease !== 'function') redis.defineCommand('aer1_log_lease', { lua: LEASE, numberOfKeys: 1 });
    if (typeof commands.aer1_log_release !== 'function') redis.defineCommand('aer1_log_release', { lua: RELEASE, numberOfKeys: 1 });
  }

  get leaseKey(): string {
    return `${this.options.base}:log:lease`;
  }

  /** Opens the folder (refusing one that is not this log's) and starts the ticks. */
  start(): void {
    this.writer = LogWriter.open({ dir: this.options.dir, origin: this.options.origin, signer: this.options.signer });
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.tick().finally(() => {
        this.running = null;
        this.schedule();
      });
    }, this.options.intervalMs);
    this.timer.unref();
  }

  /** One tick: take or renew the lease, then publish what is new. Errors are logged once per kind, never thrown. */
  async tick(): Promise<{ size: number } | null> {
    try {
      const lease = (this.redis as unknown as Record<string, Script>).aer1_log_lease!.bind(this.redis);
      const got = Number(await lease(this.leaseKey, this.holder, Math.max(10_000, 5 * this.options.intervalMs))) === 1;
      // a lease newly taken: another daemon may have written the folder meanwhile
      if (got && !this.held) this.writer = null;
      this.held = got;
      if (!got) return null;
      this.writer ??= LogWriter.open({ dir: this.options.dir, origin: this.options.origin, signer: this.options.signer });
      const out = await new LogPublisher(this.sequencer, this.writer).publish();
      if (out.resequenced > 0) this.log.warn({ resequenced: out.resequenced }, 'anchor log: Redis was behind the log folder; settled from the files');
      this.lastError = '';
      return out.checkpoint ? { size: out.checkpoint.size } : null;
    } catch (err) {
      // the writer may hold entries no checkpoint covers: reopen it from the files next tick
      this.writer = null;
      const message = (err as Error).message;
      if (message !== this.lastError) this.log.error({ err }, `anchor log: checkpoint not written (tried again every ${this.options.intervalMs} ms)`);
      this.lastError = message;
      return null;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    if (this.held) {
      const release = (this.redis as unknown as Record<string, Script>).aer1_log_release!.bind(this.redis);
      await release(this.leaseKey, this.holder).catch(() => undefined);
    }
  }
}
