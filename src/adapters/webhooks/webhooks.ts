/**
 * Webhooks wired to a daemon: one deliverer over its events stream and key prefix (one
 * BullMQ queue per hook under it), tuned by `webhookDelivery.*`, its outcomes counted in
 * the daemon's metrics registry.
 */
import { Counter } from 'prom-client';
import type { Logger } from 'pino';
import type { DaemonView } from '../view/daemon-view.js';
import { WebhookDeliverer, type WebhookDelivererOptions } from './deliverer.js';

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

export interface StartWebhooksOptions {
  daemon: DaemonView;
  log: Logger;
  /** Timings and attempts over `webhookDelivery.*` (tests shorten them). */
  tuning?: Partial<Omit<WebhookDelivererOptions, 'redis' | 'stream' | 'base' | 'queueBase' | 'hooks' | 'log'>>;
}

/** Starts delivering the daemon's state changes to every configured hook. */
export async function startWebhooks({ daemon, log, tuning = {} }: StartWebhooksOptions): Promise<WebhookDeliverer> {
  const counter = deliveriesCounter(daemon);
  const d = daemon.config.webhookDelivery;
  const deliverer = new WebhookDeliverer({
    retryHorizonMs: d.retryHorizonMs,
    backoffMs: d.backoffMs,
    backoffMaxMs: d.backoffMaxMs,
    timeoutMs: d.timeoutMs,
    concurrency: d.concurrency,
    stalledIntervalMs: daemon.config.queue.stalledIntervalMs,
    ...tuning,
    queueBase: daemon.config.queue.name,
    redis: daemon.redis,
    stream: daemon.store.keys.events,
    base: daemon.store.keys.base,
    hooks: daemon.config.webhooks,
    log,
    onOutcome: (hook, result) => {
      counter.inc({ hook, result });
      tuning.onOutcome?.(hook, result);
    },
  });
  await deliverer.start();
  return deliverer;
}
