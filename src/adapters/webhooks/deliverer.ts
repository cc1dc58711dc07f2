/**
 * Webhook delivery on BullMQ, at least once, one queue per hook (docs/http.md, Webhooks).
 *
 * - **Fan-out** (fan-out.ts): one daemon at a time per shard follows the live feed (the
 *   engine behind SSE and WebSocket) from a durable cursor and adds each change to every
 *   hook's queue, one job per subject event with its event id (`<stream id>` or
 *   `<stream id>.<i>`) as job id, before it moves the cursor past them. A daemon that dies in
 *   between leaves the cursor behind; the next fan-out adds those changes again, which BullMQ
 *   ignores for a job id it still holds (finished jobs are kept `DEDUPE_KEEP_S` for that),
 *   so no change is lost or delivered twice by such a crash (unless no daemon takes the
 *   fan-out over for longer than that: then a page of changes may be sent again).
 * - **Delivery**: each hook has its own Worker (its own concurrency and blocking
 *   connection), so a slow or dead receiver holds up only its own queue. A failed POST
 *   pauses that hook's queue for the shared backoff (`backoffDelay`) and puts the change
 *   back at the head of the queue (BullMQ's rate limiter: no attempt of BullMQ's is spent),
 *   so with concurrency 1 (BullMQ's global concurrency: across daemons) a hook's changes
 *   go out in the order they were fanned out, even across an outage.
 *   A change is retried until a 2xx, or until `maxAttempts` (computed from
 *   `retryHorizonMs`) or its horizon (made + retryHorizonMs) runs out; then it is recorded
 *   as failed and the next one goes.
 * - **BullMQ's own retries** (the processor failing: Redis refusing the outcome write)
 *   use the same backoff as its custom strategy.
 */
import { Queue, Worker, type Job } from 'bullmq';
import type { RedisClient as Redis } from '../redis/connection.js';
import type { Logger } from 'pino';
import type { WebhookConfig } from '../config/config.js';
import { scrubUrl } from '../config/display-url.js';
import { attemptsForHorizon, backoffDelay } from '../../core/retry/backoff.js';
import { VERSION } from '../../version.js';
import { boundedFailures } from '../bullmq/failed-attempts.js';
import { webhookQueueName } from '../bullmq/names.js';
import { stalledJobOptions } from '../bullmq/stalled.js';
import { displayUrl, hookId, WebhookLog, type DeliveryRecord } from './delivery-log.js';
import { ATTEMPT_HEADER, EVENT_ID_HEADER, EVENT_TYPE_HEADER, SIGNATURE_HEADER, signBody } from './signature.js';
import { FanOut, type DeliveryJob } from './fan-out.js';
import type { RefusalBackoff } from '../redis/refusal-backoff.js';

export type { DeliveryJob } from './fan-out.js';

export interface WebhookDelivererOptions {
  /** Connection for the fan-out's reads, cursor and lease, the queues and the delivery log (blocking reads use duplicates). */
  redis: Redis;
  /** The events stream key (`StateKeys.events`). */
  stream: string;
  /** The daemon's hash-tagged key prefix (`StateKeys.base`); the hooks' BullMQ keys go under it too. */
  base: string;
  /** First part of the hooks' queue names (`queue.name`; default "aer1-anchor"). */
  queueBase?: string;
  hooks: readonly WebhookConfig[];
  log: Logger;
  /** A change is retried until this long after it was made (default 3 days). */
  retryHorizonMs?: number;
  /** Attempts per change and hook before it is recorded as failed (default: enough for retryHorizonMs). */
  maxAttempts?: number;
  /** First retry delay; doubles per attempt (default 1000 ms). */
  backoffMs?: number;
  /** Cap of the retry delay (default 60 000 ms). */
  backoffMaxMs?: number;
  /** Deadline of one POST (default 10 000 ms). */
  timeoutMs?: number;
  /** POSTs in flight per hook, across every daemon (BullMQ global concurrency; default 1: in order). */
  concurrency?: number;
  /** A fan-out whose daemon stopped renewing its lease is taken over after this long (default 30 000 ms). */
  leaseMs?: number;
  /**
   * Put before every event id (job id and `X-Aer1-Event-Id`): with redis.shards K > 1 each
   * shard's stream has its own ids, so its deliverer names them `<shard>/<id>` (default '').
   */
  eventIdPrefix?: string;
  /** XREAD BLOCK timeout of the fan-out's live reader (default 5000 ms). */
  blockMs?: number;
  /** Live changes the fan-out holds before it replays from its cursor instead (default 5000). */
  maxPending?: number;
  /** How soon a dead daemon's in-flight delivery is handed back (queue.stalledIntervalMs; default 30 000 ms). */
  stalledIntervalMs?: number;
  /** The daemon's shared backoff while Redis refuses writes (the hooks' workers pause with the rest). */
  refusals?: RefusalBackoff;
  /** Called after each delivery settles (metrics). */
  onOutcome?: (hook: string, outcome: DeliveryRecord['outcome']) => void;
  /**
   * Called when a hook answered 2xx for a change, before the outcome is recorded; a throw
   * fails the job, which BullMQ retries (the change is sent again: at least once). Retention
   * notes proof acknowledgements here.
   */
  onDelivered?: (hook: string, job: DeliveryJob) => Promise<void>;
}

export const DELIVERY_JOB = 'deliver';
export const DEFAULT_RETRY_HORIZON_MS = 3 * 86_400_000;
/**
 * Finished delivery jobs are kept at least this long (and 5 × leaseMs), so a fan-out redone
 * after a crash (taken over once the lease ends) finds their ids. About 1.4 KB per change
 * and hook while kept (docs/reliability.md, Sizing).
 */
export const DEDUPE_KEEP_S = 600;
const MAX_RESPONSE_PREVIEW = 200;
/** Delivery jobs per addBulk (one MULTI). */
const ENQUEUE_PAGE = 500;
function errorText(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError') return 'timed out';
  return e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
}

/**
 * Adds changes to a hook's queue, in order, job id = stream id: adding one again while its
 * job is kept (waiting, in flight, or finished less than the keep time ago) does nothing.
 */
export async function enqueueChanges(queue: Queue<DeliveryJob>, changes: readonly DeliveryJob[]): Promise<void> {
  // a page of packed entries is thousands of changes: added in bounded MULTIs, in order
  for (let i = 0; i < changes.length; i += ENQUEUE_PAGE) {
    await queue.addBulk(changes.slice(i, i + ENQUEUE_PAGE).map((c) => ({ name: DELIVERY_JOB, data: c, opts: { jobId: c.eventId } })));
  }
}

interface Attempt {
  ok: boolean;
  httpStatus: number | null;
  error: string | null;
}

interface Tuning {
  redis: Redis;
  /** Seconds finished jobs are kept (their ids deduplicate a fan-out redone after a crash). */
  keepS: number;
  log: Logger;
  retryHorizonMs: number;
  maxAttempts: number;
  backoffMs: number;
  backoffMaxMs: number;
  timeoutMs: number;
  concurrency: number;
  stalledIntervalMs: number;
  onOutcome: WebhookDelivererOptions['onOutcome'];
  onDelivered: WebhookDelivererOptions['onDelivered'];
  refusals: RefusalBackoff | undefined;
}

class HookDelivery {
  readonly id: string;
  readonly queue: Queue<DeliveryJob>;
  private readonly url: string;
  private readonly secret: string;
  private readonly headers: Record<string, string>;
  private readonly queueName: string;
  private worker: Worker<DeliveryJob> | null = null;
  private stopping = false;
  private readonly abort = new AbortController();

  constructor(
    hook: WebhookConfig,
    queueBase: string,
    private readonly base: string,
    private readonly t: Tuning,
    private readonly deliveries: WebhookLog,
  ) {
    this.id = hookId(hook.url);
    this.url = hook.url;
    this.secret = hook.secret;
    this.headers = hook.headers ?? {};
    this.queueName = webhookQueueName(queueBase, this.id);
    this.queue = new Queue<DeliveryJob>(this.queueName, {
      connection: t.redis,
      prefix: base,
      // nobody listens to these queues' events: keep BullMQ's event stream short (default 10,000)
      streams: { events: { maxLen: 100 } },
      defaultJobOptions: {
        // BullMQ's attempts are for the processor failing (Redis); a receiver failing pauses the queue instead
        attempts: t.maxAttempts,
        backoff: { type: 'custom' },
        removeOnComplete: { age: t.keepS },
        removeOnFail: { age: t.keepS },
      },
    });
    this.queue.on('error', (err: Error) => {
      if (!this.stopping) t.log.warn({ hook: this.id, err }, 'webhook queue error');
    });
  }

  async start(): Promise<void> {
    // across every daemon: with 1, one POST per hook at a time, so its changes keep their order
    await this.queue.setGlobalConcurrency(this.t.concurrency);
    const worker = new Worker<DeliveryJob>(this.queueName, boundedFailures((job: Job<DeliveryJob>) => this.deliver(job), this.t.log), {
      connection: this.t.redis,
      prefix: this.base,
      concurrency: this.t.concurrency,
      ...stalledJobOptions(this.t.stalledIntervalMs),
      // the limiter is what a failed delivery pauses (worker.rateLimit); its max is no real limit
      limiter: { max: 1_000_000, duration: 1000 },
      settings: { backoffStrategy: (attemptsMade: number) => backoffDelay(attemptsMade, this.t.backoffMs, this.t.backoffMaxMs) },
    });
    const otherError = (err: Error): void => {
      if (!this.stopping) this.t.log.warn({ hook: this.id, err }, 'webhook worker error');
    };
    if (this.t.refusals) this.t.refusals.watch(worker, otherError);
    else worker.on('error', otherError);
    worker.on('failed', (job, err) => {
      if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) {
        this.t.log.error({ hook: this.id, eventId: job.data.eventId, err }, 'webhook delivery job failed for good (its outcome could not be recorded)');
      }
    });
    this.worker = worker;
  }

  async waitUntilReady(): Promise<void> {
    await Promise.all([this.queue.waitUntilReady(), this.worker?.waitUntilReady()]);
  }

  private async deliver(job: Job<DeliveryJob>): Promise<void> {
    const { eventId, body } = job.data;
    const attempt = Math.max(1, job.attemptsStarted);
    let event: { key?: string; type?: string } = {};
    try {
      event = JSON.parse(body) as typeof event;
    } catch {
      // delivered as it is; the receiver sees the same bytes the stream holds
    }
    const type = event.type ?? 'unknown';
    const horizonEnd = job.timestamp + this.t.retryHorizonMs;
    const settle = async (last: Attempt, attempts: number): Promise<void> => {
      const record: DeliveryRecord = {
        eventId,
        key: event.key ?? '',
        type,
        outcome: last.ok ? 'delivered' : 'failed',
        attempts,
        httpStatus: last.httpStatus,
        error: last.ok ? null : last.error,
        at: new Date().toISOString(),
      };
      if (last.ok) await this.t.onDelivered?.(this.id, job.data);
      await this.deliveries.record(this.id, record);
      this.t.onOutcome?.(this.id, record.outcome);
      if (!last.ok) {
        this.t.log.warn({ hook: this.id, url: displayUrl(this.url), eventId, attempts, status: last.httpStatus, err: last.error }, 'webhook delivery failed');
      }
    };

    // Past its horizon behind a receiver that keeps failing: recorded without another try,
    // so a backlog behind a receiver gone for good drains instead of costing a timeout each.
    if (Date.now() >= horizonEnd && attempt === 1 && (await this.lastOutcomeFailed())) {
      return settle({ ok: false, httpStatus: null, error: 'not sent: older than the retry horizon while the receiver kept failing' }, 0);
    }

    const last = await this.post(body, eventId, type, attempt);
    if (last.ok) return settle(last, attempt);
    if (this.stopping) {
      // stopped mid-POST: back to the head of the queue, for this daemon's next start or another daemon
      throw Worker.RateLimitError();
    }
    const delay = backoffDelay(attempt, this.t.backoffMs, this.t.backoffMaxMs);
    if (attempt >= this.t.maxAttempts || Date.now() + delay > horizonEnd) return settle(last, attempt);
    // a warn at attempts 1, 2, 4, 8, ...: an outage shows in the log, a dozen lines over days
    const level = (attempt & (attempt - 1)) === 0 ? 'warn' : 'debug';
    this.t.log[level]({ hook: this.id, url: displayUrl(this.url), eventId, attempt, status: last.httpStatus, err: last.error, retryInMs: delay }, 'webhook attempt failed; the hook waits and tries again');
    // pause the whole hook (every daemon) and put this change back first: order is kept
    await this.worker!.rateLimit(delay);
    throw Worker.RateLimitError();
  }

  private async lastOutcomeFailed(): Promise<boolean> {
    const [delivered, failed] = await this.t.redis.hmget(this.deliveries.totalsKey(this.id), 'lastDeliveredAt', 'lastFailedAt');
    return typeof failed === 'string' && (typeof delivered !== 'string' || failed > delivered);
  }

  private async post(body: string, eventId: string, type: string, attempt: number): Promise<Attempt> {
    try {
      const res = await fetch(this.url, {
        method: 'POST',
        headers: {
          ...this.headers,
          'Content-Type': 'application/json',
          'User-Agent': `aer1-anchor/${VERSION}`,
          [SIGNATURE_HEADER]: signBody(body, this.secret),
          [EVENT_ID_HEADER]: eventId,
          [EVENT_TYPE_HEADER]: type,
          [ATTEMPT_HEADER]: String(attempt),
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.any([this.abort.signal, AbortSignal.timeout(this.t.timeoutMs)]),
      });
      const ok = res.status >= 200 && res.status < 300;
      let preview = '';
      if (!ok) preview = (await res.text().catch(() => '')).slice(0, MAX_RESPONSE_PREVIEW);
      else await res.body?.cancel().catch(() => undefined);
      return { ok, httpStatus: res.status, error: ok ? null : scrubUrl(`HTTP ${res.status}${preview ? `: ${preview}` : ''}`, this.url) };
    } catch (err) {
      // fetch quotes the whole URL in some errors (credentials included): it is stored and shown
      return { ok: false, httpStatus: null, error: scrubUrl(errorText(err), this.url) };
    }
  }

  /** Stops taking changes; a POST in flight is cut short and its change goes back to the queue. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.abort.abort();
    await this.worker?.close();
    await this.queue.close();
  }
}

export class WebhookDeliverer {
  readonly log: WebhookLog;
  /** Attempts per change (from the horizon unless given). */
  readonly maxAttempts: number;
  private readonly hooks: HookDelivery[];
  private readonly fanOut: FanOut;
  private started = false;

  constructor(opts: WebhookDelivererOptions) {
    this.log = new WebhookLog(opts.redis, opts.base);
    const leaseMs = opts.leaseMs ?? 30_000;
    const plog = opts.log.child({ part: 'webhooks' });
    const backoffMs = opts.backoffMs ?? 1000;
    const backoffMaxMs = Math.max(backoffMs, opts.backoffMaxMs ?? 60_000);
    const retryHorizonMs = opts.retryHorizonMs ?? DEFAULT_RETRY_HORIZON_MS;
    this.maxAttempts = Math.max(1, opts.maxAttempts ?? attemptsForHorizon(retryHorizonMs, backoffMs, backoffMaxMs));
    const tuning: Tuning = {
      redis: opts.redis,
      keepS: Math.max(DEDUPE_KEEP_S, Math.ceil((5 * leaseMs) / 1000)),
      log: plog,
      retryHorizonMs,
      maxAttempts: this.maxAttempts,
      backoffMs,
      backoffMaxMs,
      timeoutMs: opts.timeoutMs ?? 10_000,
      concurrency: opts.concurrency ?? 1,
      stalledIntervalMs: opts.stalledIntervalMs ?? 30_000,
      onOutcome: opts.onOutcome,
      onDelivered: opts.onDelivered,
      refusals: opts.refusals,
    };
    this.hooks = opts.hooks.map((hook) => new HookDelivery(hook, opts.queueBase ?? 'aer1-anchor', opts.base, tuning, this.log));
    this.fanOut = new FanOut({
      redis: opts.redis,
      stream: opts.stream,
      base: opts.base,
      log: plog,
      eventIdPrefix: opts.eventIdPrefix ?? '',
      leaseMs,
      ...(opts.blockMs !== undefined ? { blockMs: opts.blockMs } : {}),
      ...(opts.maxPending !== undefined ? { maxPending: opts.maxPending } : {}),
      add: async (changes) => {
        await Promise.all(this.hooks.map((h) => enqueueChanges(h.queue, changes)));
      },
    });
  }

  /** Hook ids, in configuration order. */
  get hookIds(): string[] {
    return this.hooks.map((h) => h.id);
  }

  /** The delivery queue of a hook (by id), for counts and tests. */
  queueOf(hook: string): Queue<DeliveryJob> | undefined {
    return this.hooks.find((h) => h.id === hook)?.queue;
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await Promise.all(this.hooks.map((h) => h.start()));
    await Promise.all(this.hooks.map((h) => h.waitUntilReady()));
    await this.fanOut.start();
  }

  /** Stops fanning out and delivering; a change in flight goes back to its queue and is delivered later. */
  async stop(): Promise<void> {
    await this.fanOut.stop();
    await Promise.all(this.hooks.map((h) => h.stop()));
  }
}
