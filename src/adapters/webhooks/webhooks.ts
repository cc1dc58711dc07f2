/**
 * Webhooks wired to a daemon: one deliverer over its events stream and key prefix (one
 * BullMQ queue per hook under it), tuned by `webhookDelivery.*`, its outcomes counted in
 * the daemon's metrics registry.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { DaemonView } from '../view/daemon-view.js';
import { WebhookDeliverer, type WebhookDelivererOptions } from './deliverer.js';
import { hookId } from './delivery-log.js';
import { WebhookHandover } from '../retention/handover.js';

export { WebhookDeliverer } from './deliverer.js';
export { WebhookLog, hookId, displayUrl, type DeliveryRecord, type HookOverview } from './delivery-log.js';
export { signBody, verifySignature, SIGNATURE_HEADER, EVENT_ID_HEADER, EVENT_TYPE_HEADER, ATTEMPT_HEADER } from './signature.js';

const METRIC = 'aer1_webhook_deliveries_total';

function deliveriesCounter(daemon: DaemonView): Counter<'hook' | 'result'> {
  const existing = daemon.metrics.registry.getSingleMetric(METRIC);
  if (existing) return existing as Counter<'hook' | 'result'>;
  return new Counter({
    name: METRIC,
    help: 'Webhook deliveries by hook id and outcome (delivered, failed after every attempt).',
    labelNames: ['hook', 'result'],
    registers: [daemon.metrics.registry],
  });
}

const BACKLOG_METRIC = 'aer1_webhook_backlog';
/** The deliverers each registry's backlog gauge reads: the latest started per shard, summed. */
const backlogSources = new WeakMap<Registry, Map<number, WebhookDeliverer>>();

function backlogGauge(daemon: DaemonView, deliverer: WebhookDeliverer, shard: number): void {
  const registry = daemon.metrics.registry;
  const sources = backlogSources.get(registry) ?? new Map<number, WebhookDeliverer>();
  sources.set(shard, deliverer);
  backlogSources.set(registry, sources);
  if (registry.getSingleMetric(BACKLOG_METRIC)) return;
  new Gauge({
    name: BACKLOG_METRIC,
    help: 'State changes not yet delivered, by hook id: queued, in flight, or waiting out a retry pause.',
    labelNames: ['hook'],
    registers: [registry],
    async collect() {
      const sources = [...(backlogSources.get(registry)?.values() ?? [])];
      if (sources.length === 0) return;
      this.reset();
      for (const hook of sources[0]!.hookIds) {
        try {
          let n = 0;
          for (const source of sources) {
            const c = await source.queueOf(hook)!.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'paused');
            n += Object.values(c).reduce((a, b) => a + b, 0);
          }
          this.set({ hook }, n);
        } catch {
          // stopped, or Redis unreachable: no figure rather than a wrong one
        }
      }
    },
  });
}

export interface StartWebhooksOptions {
  daemon: DaemonView;
  log: Logger;
  /** Timings and attempts over `webhookDelivery.*` (tests shorten them). */
  tuning?: Partial<Omit<WebhookDelivererOptions, 'redis' | 'stream' | 'base' | 'queueBase' | 'hooks' | 'log'>>;
  /** The shard whose state changes this deliverer sends (redis.shards; default 0, the only one with one shard). */
  shard?: number;
}

/** Starts delivering the daemon's state changes to every configured hook. */
export async function startWebhooks({ daemon, log, tuning = {}, shard = 0 }: StartWebhooksOptions): Promise<WebhookDeliverer> {
  const keys = daemon.state.shards[shard]!.keys;
  const counter = deliveriesCounter(daemon);
  const d = daemon.config.webhookDelivery;
  const handover = new WebhookHandover(daemon.redis, keys.base, daemon.config.webhooks.map((h) => hookId(h.url)));
  const deliverer = new WebhookDeliverer({
    retryHorizonMs: d.retryHorizonMs,
    backoffMs: d.backoffMs,
    backoffMaxMs: d.backoffMaxMs,
    timeoutMs: d.timeoutMs,
    concurrency: d.concurrency,
    stalledIntervalMs: daemon.config.queue.stalledIntervalMs,
    ...(daemon.refusals ? { refusals: daemon.refusals } : {}),
    ...tuning,
    queueBase: daemon.config.queue.name,
    redis: daemon.redis,
    stream: keys.events,
    base: keys.base,
    // each shard's stream ids are its own: named by shard so that they stay unique across shards
    eventIdPrefix: daemon.state.count > 1 ? `${shard}/` : '',
    hooks: daemon.config.webhooks,
    log,
    onOutcome: (hook, result) => {
      counter.inc({ hook, result });
      tuning.onOutcome?.(hook, result);
    },
    // retention counts a proof handed over once every hook acknowledged it
    onDelivered: (hook, job) => handover.acknowledge(hook, job.body),
  });
  await deliverer.start();
  backlogGauge(daemon, deliverer, shard);
  return deliverer;
}

/** One deliverer per shard (redis.shards): each shard's stream is delivered on its own, under its own hash tag. */
export async function startShardWebhooks(opts: Omit<StartWebhooksOptions, 'shard'>): Promise<{ deliverers: WebhookDeliverer[]; stop(): Promise<void> }> {
  const deliverers: WebhookDeliverer[] = [];
  for (let shard = 0; shard < opts.daemon.state.count; shard++) deliverers.push(await startWebhooks({ ...opts, shard }));
  return {
    deliverers,
    async stop() {
      for (const d of deliverers) await d.stop();
    },
  };
}
