/**
 * Webhook delivery, at least once: each hook has its own consumer group on the events
 * stream, so several daemons share the work and a restarted one resumes where its group
 * left off. An entry is acknowledged only after its POST got a 2xx or its attempts ran
 * out (then it is recorded as failed); entries left pending by a daemon that died are
 * taken over with XAUTOCLAIM once idle long enough. Per hook, changes go out in order.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { WebhookConfig } from '../config/config.js';
import { scrubUrl } from '../config/display-url.js';
import { VERSION } from '../../version.js';
import { displayUrl, hookId, WebhookLog, type DeliveryRecord } from './delivery-log.js';
import { ATTEMPT_HEADER, EVENT_ID_HEADER, EVENT_TYPE_HEADER, SIGNATURE_HEADER, signBody } from './signature.js';

export interface WebhookDelivererOptions {
  /** Connection for acknowledgements, claims and the delivery log (each hook blocks on its own duplicate). */
  redis: Redis;
  /** The events stream key (`StateKeys.events`). */
  stream: string;
  /** The daemon's hash-tagged key prefix (`StateKeys.base`). */
  base: string;
  hooks: readonly WebhookConfig[];
  log: Logger;
  /** Attempts per change and hook before it is recorded as failed (default 8). */
  maxAttempts?: number;
  /** First retry delay; doubles per attempt (default 1000 ms). */
  backoffMs?: number;
  /** Cap of the retry delay (default 60 000 ms). */
  backoffMaxMs?: number;
  /** Deadline of one POST (default 10 000 ms). */
  timeoutMs?: number;
  /** A change pending this long at another consumer is taken over (default 60 000 ms). */
  claimIdleMs?: number;
  /** XREADGROUP BLOCK timeout (default 5000 ms). */
  blockMs?: number;
  /** This process's consumer name (default host:pid:random). */
  consumer?: string;
  /** Called after each delivery settles (metrics). */
  onOutcome?: (hook: string, outcome: DeliveryRecord['outcome']) => void;
}

type RawEntry = [id: string, fields: string[]];

/** Consumers idle this long with nothing pending are removed from the group at start. */
const STALE_CONSUMER_MS = 24 * 3_600_000;
const MAX_RESPONSE_PREVIEW = 200;
const CLAIM_PAGE = 50;

export function consumerGroup(hook: string): string {
  return `aer1-webhook-${hook}`;
}

/** Delay before attempt `attempt` (2, 3, ...): the base doubling per attempt, capped. */
export function retryDelay(attempt: number, baseMs: number, maxMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, attempt - 2), maxMs);
}

function dataOf(fields: string[]): string | null {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'data') return fields[i + 1]!;
  return null;
}

function isoNow(): string {
  return new Date().toISOString();
}

function errorText(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError') return 'timed out';
  return e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
}

interface Attempt {
  ok: boolean;
  httpStatus: number | null;
  error: string | null;
}

class HookWorker {
  readonly id: string;
  private readonly url: string;
  private readonly secret: string;
  private readonly headers: Record<string, string>;
  private readonly group: string;
  private readonly reader: Redis;
  private stopped = false;
  private readonly abort = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(
    hook: WebhookConfig,
    private readonly opts: Required<Omit<WebhookDelivererOptions, 'hooks' | 'onOutcome'>> & Pick<WebhookDelivererOptions, 'onOutcome'>,
    private readonly deliveries: WebhookLog,
  ) {
    this.id = hookId(hook.url);
    this.url = hook.url;
    this.secret = hook.secret;
    this.headers = hook.headers ?? {};
    this.group = consumerGroup(this.id);
    this.reader = opts.redis.duplicate();
    this.reader.on('error', (err: Error) => {
      if (!this.stopped) opts.log.warn({ hook: this.id, err }, 'webhook reader connection error');
    });
  }

  async start(): Promise<void> {
    await this.ensureGroup();
    await this.removeStaleConsumers();
    this.loop = this.run();
  }

  private async ensureGroup(): Promise<void> {
    try {
      await this.opts.redis.xgroup('CREATE', this.opts.stream, this.group, '$', 'MKSTREAM');
    } catch (err) {
      if (!/BUSYGROUP/.test((err as Error).message)) throw err;
    }
  }

  private async removeStaleConsumers(): Promise<void> {
    const rows = (await this.opts.redis.xinfo('CONSUMERS', this.opts.stream, this.group)) as Array<Array<string | number>>;
    for (const row of rows) {
      const info: Record<string, string | number> = {};
      for (let i = 0; i + 1 < row.length; i += 2) info[String(row[i])] = row[i + 1]!;
      if (info.name !== this.opts.consumer && Number(info.pending) === 0 && Number(info.idle) > STALE_CONSUMER_MS) {
        await this.opts.redis.xgroup('DELCONSUMER', this.opts.stream, this.group, String(info.name));
      }
    }
  }

  private async run(): Promise<void> {
    let lastClaim = 0;
    while (!this.stopped) {
      try {
        if (Date.now() - lastClaim >= Math.min(this.opts.claimIdleMs, 30_000)) {
          lastClaim = Date.now();
          const claimed = await this.claimStale();
          for (const entry of claimed) await this.process(entry);
          // a full page may mean more are waiting: claim again at once
          if (claimed.length >= CLAIM_PAGE) lastClaim = 0;
          if (claimed.length > 0) continue;
        }
        const res = (await this.reader.xreadgroup(
          'GROUP', this.group, this.opts.consumer,
          'COUNT', 20, 'BLOCK', this.opts.blockMs,
          'STREAMS', this.opts.stream, '>',
        )) as Array<[string, RawEntry[]]> | null;
        for (const [, entries] of res ?? []) for (const entry of entries) await this.process(entry);
      } catch (err) {
        if (this.stopped) break;
        const message = (err as Error).message;
        if (/NOGROUP/.test(message)) await this.ensureGroup().catch(() => undefined);
        this.opts.log.warn({ hook: this.id, err }, 'webhook read failed; retrying');
        await this.sleep(1000);
      }
    }
  }

  /** Takes over changes another consumer (a dead daemon) left unacknowledged. */
  private async claimStale(): Promise<RawEntry[]> {
    const res = (await this.opts.redis.xautoclaim(this.opts.stream, this.group, this.opts.consumer, this.opts.claimIdleMs, '0-0', 'COUNT', CLAIM_PAGE)) as [
      string,
      Array<RawEntry | null>,
      string[]?,
    ];
    const entries = res[1].filter((e): e is RawEntry => e !== null);
    // Entries trimmed from the stream while pending cannot be delivered any more.
    const gone = res[2] ?? [];
    if (gone.length > 0) await this.opts.redis.xack(this.opts.stream, this.group, ...gone);
    return entries;
  }

  private async process([eventId, fields]: RawEntry): Promise<void> {
    const body = dataOf(fields);
    if (body === null) {
      await this.opts.redis.xack(this.opts.stream, this.group, eventId);
      return;
    }
    let event: { key?: string; type?: string } = {};
    try {
      event = JSON.parse(body) as typeof event;
    } catch {
      // delivered as it is; the receiver sees the same bytes the stream holds
    }
    let last: Attempt = { ok: false, httpStatus: null, error: null };
    let attempt = 0;
    while (attempt < this.opts.maxAttempts) {
      if (this.stopped) return;
      attempt += 1;
      if (attempt > 1) {
        await this.sleep(retryDelay(attempt, this.opts.backoffMs, this.opts.backoffMaxMs));
        if (this.stopped) return;
        // still ours: reset its idle time so no other daemon takes it over mid-retry
        await this.opts.redis.xclaim(this.opts.stream, this.group, this.opts.consumer, 0, eventId, 'JUSTID');
      }
      last = await this.post(body, eventId, event.type ?? 'unknown', attempt);
      if (this.stopped && !last.ok) return;
      if (last.ok) break;
      this.opts.log.debug({ hook: this.id, eventId, attempt, status: last.httpStatus, err: last.error }, 'webhook attempt failed');
    }
    const record: DeliveryRecord = {
      eventId,
      key: event.key ?? '',
      type: event.type ?? 'unknown',
      outcome: last.ok ? 'delivered' : 'failed',
      attempts: attempt,
      httpStatus: last.httpStatus,
      error: last.ok ? null : last.error,
      at: isoNow(),
    };
    await this.deliveries.record(this.id, record);
    await this.opts.redis.xack(this.opts.stream, this.group, eventId);
    this.opts.onOutcome?.(this.id, record.outcome);
    if (!last.ok) {
      this.opts.log.warn({ hook: this.id, url: displayUrl(this.url), eventId, attempts: attempt, status: last.httpStatus, err: last.error }, 'webhook delivery failed');
    }
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
        signal: AbortSignal.any([this.abort.signal, AbortSignal.timeout(this.opts.timeoutMs)]),
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

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.stopped) return resolve();
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.abort.signal.addEventListener('abort', done, { once: true });
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    this.reader.disconnect();
    await this.loop;
  }
}

export class WebhookDeliverer {
  readonly consumer: string;
  readonly log: WebhookLog;
  private readonly workers: HookWorker[];
  private started = false;

  constructor(opts: WebhookDelivererOptions) {
    this.consumer = opts.consumer ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.log = new WebhookLog(opts.redis, opts.base);
    const full = {
      redis: opts.redis,
      stream: opts.stream,
      base: opts.base,
      log: opts.log.child({ part: 'webhooks' }),
      maxAttempts: opts.maxAttempts ?? 8,
      backoffMs: opts.backoffMs ?? 1000,
      backoffMaxMs: opts.backoffMaxMs ?? 60_000,
      timeoutMs: opts.timeoutMs ?? 10_000,
      claimIdleMs: opts.claimIdleMs ?? 60_000,
      blockMs: opts.blockMs ?? 5000,
      consumer: this.consumer,
      onOutcome: opts.onOutcome,
    };
    this.workers = opts.hooks.map((hook) => new HookWorker(hook, full, this.log));
  }

  /** Hook ids, in configuration order. */
  get hookIds(): string[] {
    return this.workers.map((w) => w.id);
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await Promise.all(this.workers.map((w) => w.start()));
  }

  /** Stops reading; a change in flight stays unacknowledged and is delivered again later. */
  async stop(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.stop()));
  }
}
