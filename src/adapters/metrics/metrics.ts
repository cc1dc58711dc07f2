/**
 * Prometheus metrics (prom-client), one registry per daemon. Labels name witnesses,
 * relays, calendars and statuses; never a subject.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface GaugeSource {
  countByWitness(): Promise<Record<string, Record<string, number>>>;
  countByStatus(): Promise<Record<string, number>>;
  oldestUnconfirmedSeconds(): Promise<Record<string, number>>;
  queueCounts(): Promise<{ waiting: number; active: number; delayed: number; failed: number }>;
}

export class DaemonMetrics {
  readonly registry = new Registry();
  private readonly relayPublishTotal: Counter<'relay' | 'result'>;
  private readonly calendarRequestsTotal: Counter<'calendar' | 'result'>;
  private readonly timeToConfirm: Histogram<'witness'>;
  private readonly intakeTotal: Counter<'result'>;
  private readonly repairsTotal: Counter<'kind'>;
  private source: GaugeSource | null = null;

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    this.relayPublishTotal = new Counter({
      name: 'aer1_relay_publish_total',
      help: 'Publish attempts per relay by outcome (accepted, rejected:<prefix>, timeout, error).',
      labelNames: ['relay', 'result'],
      registers: [this.registry],
    });
    this.calendarRequestsTotal = new Counter({
      name: 'aer1_calendar_requests_total',
      help: 'Calendar requests (submit, upgrade) by outcome.',
      labelNames: ['calendar', 'result'],
      registers: [this.registry],
    });
    this.timeToConfirm = new Histogram({
      name: 'aer1_anchor_time_to_confirm_seconds',
      help: 'Seconds from acceptance to a witness being confirmed.',
      labelNames: ['witness'],
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86_400, 3 * 86_400],
      registers: [this.registry],
    });
    this.intakeTotal = new Counter({
      name: 'aer1_intake_jobs_total',
      help: 'Intake jobs processed by outcome, a bulk job counted once per subject (accepted includes duplicates; refused includes conflicts).',
      labelNames: ['result'],
      registers: [this.registry],
    });
    this.repairsTotal = new Counter({
      name: 'aer1_reconciler_repairs_total',
      help: 'Jobs the reconciler re-created because the state needed them and none was live, by kind (inbox, relay-publish, relay-reopen, nostr-witness, nostr-batch, ots-submit, ots-poll).',
      labelNames: ['kind'],
      registers: [this.registry],
    });
    const self = this;
    new Gauge({
      name: 'aer1_anchor_subjects',
      help: 'Subjects by witness and witness status; witness="all" carries the overall status.',
      labelNames: ['status', 'witness'],
      registers: [this.registry],
      async collect() {
        if (!self.source) return;
        this.reset();
        for (const [witness, counts] of Object.entries(await self.source.countByWitness())) {
          for (const [status, n] of Object.entries(counts)) this.set({ witness, status }, n);
        }
        for (const [status, n] of Object.entries(await self.source.countByStatus())) this.set({ witness: 'all', status }, n);
      },
    });
    new Gauge({
      name: 'aer1_anchor_oldest_pending_seconds',
      help: 'Age of the oldest subject whose witness is not yet confirmed (0 when none).',
      labelNames: ['witness'],
      registers: [this.registry],
      async collect() {
        if (!self.source) return;
        this.reset();
        for (const [witness, s] of Object.entries(await self.source.oldestUnconfirmedSeconds())) this.set({ witness }, s);
      },
    });
    const queue = new Gauge({
      name: 'aer1_queue_jobs',
      help: 'Jobs in the intake and witness queues by state.',
      labelNames: ['state'],
      registers: [this.registry],
      async collect() {
        if (!self.source) return;
        const c = await self.source.queueCounts();
        for (const [state, n] of Object.entries(c)) queue.set({ state }, n);
      },
    });
  }

  /** Where the gauges read their numbers at scrape time. */
  attach(source: GaugeSource): void {
    this.source = source;
  }

  relayPublish(relay: string, result: string): void {
    this.relayPublishTotal.inc({ relay, result });
  }

  calendarRequest(calendar: string, result: string): void {
    this.calendarRequestsTotal.inc({ calendar, result });
  }

  witnessChange(witness: string, status: string, createdMs: number): void {
    if (status === 'confirmed' && createdMs > 0) this.timeToConfirm.observe({ witness }, Math.max(0, (Date.now() - createdMs) / 1000));
  }

  reconcilerRepairs(kind: string, n: number): void {
    this.repairsTotal.inc({ kind }, n);
  }

  /** `n` subjects (a bulk job counts each of its subjects). */
  intake(result: 'accepted' | 'refused', n = 1): void {
    if (n > 0) this.intakeTotal.inc({ result }, n);
  }
}
