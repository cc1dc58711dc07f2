/**
 * Prometheus metrics (prom-client), one registry per daemon. Labels name witnesses,
 * relays, calendars and statuses; never a subject. A relay or calendar is always the label
 * `url` in one form (displayUrl: scheme, host, path, so `ws://h:1` is `ws://h:1/`), so every
 * endpoint metric joins on (kind, url) or url. Counters start at 0 for the label values
 * known at start (`known`), so a panel or rule over them has a series before the first event.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { displayUrl } from '../config/display-url.js';
import type { EndpointHealth } from '../health/witness-health.js';

/** The label values known at start, each counter's series created at 0. */
export interface KnownLabels {
  relays: readonly string[];
  /** The relays upkeep checks (relayUpkeep.enabled). */
  upkeepRelays?: readonly string[];
  calendars: readonly string[];
  repairKinds: readonly string[];
  nostrModes: readonly string[];
  /** The anchor log's TSAs and witnesses (log.tsaUrls, log.witnesses[].url). */
  tsas?: readonly string[];
  logWitnesses?: readonly string[];
}

export interface GaugeSource {
  countByWitness(): Promise<Record<string, Record<string, number>>>;
  countByStatus(): Promise<Record<string, number>>;
  oldestUnconfirmedSeconds(): Promise<Record<string, number>>;
  queueCounts(): Promise<{ waiting: number; active: number; delayed: number; failed: number }>;
  /** Relay upkeep: per relay, the oldest `created_at` (s) it held on its own when last checked (null: not known yet). Absent: upkeep off. */
  relayUpkeep?(): Promise<Array<{ url: string; oldestHeld: number | null }>>;
  /** Does Redis take writes now (the `/readyz` probe)? Absent: the gauge is not reported. */
  redisWritable?(): Promise<boolean>;
}

type UpkeepCount = 'checked' | 'missing' | 'unknown' | 'republished';

/** Requests to witnesses and time witnesses: relay publishes, calendar, TSA and log witness requests, and checkpoints below quorum. */
function requestCounters(registry: Registry) {
  return {
    relayPublishTotal: new Counter({
      name: 'aer1_relay_publish_total',
      help: 'Publish attempts per relay (url) by outcome (accepted, rejected:<prefix>, timeout, error).',
      labelNames: ['url', 'result'],
      registers: [registry],
    }),
    calendarRequestsTotal: new Counter({
      name: 'aer1_calendar_requests_total',
      help: 'Calendar requests (submit, upgrade) per calendar (url) by outcome.',
      labelNames: ['url', 'result'],
      registers: [registry],
    }),
    tsaRequestsTotal: new Counter({
      name: 'aer1_log_tsa_requests_total',
      help: 'RFC 3161 time-stamp requests for anchor log checkpoints per TSA (url) by outcome (token, or the TsaError code: timeout, network, http_status, refused, bad_token, …).',
      labelNames: ['url', 'result'],
      registers: [registry],
    }),
    logWitnessRequestsTotal: new Counter({
      name: 'aer1_log_witness_requests_total',
      help: 'add-checkpoint requests for anchor log checkpoints per C2SP witness (url) by outcome (cosigned, or the WitnessError code: witness_inconsistent for a fork, witness_forbidden, witness_unknown_origin, witness_timeout, …).',
      labelNames: ['url', 'result'],
      registers: [registry],
    }),
    checkpointsBelowQuorum: new Counter({
      name: 'aer1_log_checkpoints_below_quorum_total',
      help: 'Anchor log checkpoints left with fewer TSA tokens (kind="tsa") or witness cosignatures (kind="witness") than the quorum, after their attempts or on a refusal.',
      labelNames: ['kind'],
      registers: [registry],
    }),
  };
}

/** Subjects through the pipeline: time to confirm, intake, reconciler repairs, Nostr mode decisions, retention. */
function subjectCounters(registry: Registry) {
  return {
    timeToConfirm: new Histogram({
      name: 'aer1_anchor_time_to_confirm_seconds',
      help: 'Seconds from acceptance to a witness being confirmed.',
      labelNames: ['witness'],
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86_400, 3 * 86_400],
      registers: [registry],
    }),
    intakeTotal: new Counter({
      name: 'aer1_intake_jobs_total',
      help: 'Intake jobs processed by outcome, a bulk job counted once per subject (accepted includes duplicates; refused includes conflicts).',
      labelNames: ['result'],
      registers: [registry],
    }),
    repairsTotal: new Counter({
      name: 'aer1_reconciler_repairs_total',
      help: 'Jobs the reconciler re-created because the state needed them and none was live, by kind (inbox, relay-publish, relay-reopen, nostr-witness, nostr-batch, ots-submit, ots-poll, nip03).',
      labelNames: ['kind'],
      registers: [registry],
    }),
    nostrModeSubjects: new Counter({
      name: 'aer1_nostr_mode_subjects_total',
      help: 'Subjects of cut Nostr batches by the kind of event decided for them (envelope: one event each; batch: one batch event per cut); auto mode switches between them.',
      labelNames: ['mode'],
      registers: [registry],
    }),
    retiredTotal: new Counter({
      name: 'aer1_retention_retired_total',
      help: 'Confirmed subjects removed from Redis by retention after their proof was handed over (archive and/or every webhook).',
      registers: [registry],
    }),
  };
}

/** Relay upkeep per relay: events checked, found missing (handed back), unknown (relay not asked), published again and accepted. */
function upkeepCounters(registry: Registry): Record<UpkeepCount, Counter<'url'>> {
  const upkeepCounter = (name: string, help: string): Counter<'url'> => new Counter({ name, help, labelNames: ['url'], registers: [registry] });
  return {
    checked: upkeepCounter('aer1_relay_upkeep_checked_total', 'Relay upkeep: anchor events a relay (url) accepted that were asked of it again.'),
    missing: upkeepCounter('aer1_relay_upkeep_missing_total', 'Relay upkeep: of those, events the relay answered without (lost): handed back to its outbox to be sent again.'),
    unknown: upkeepCounter('aer1_relay_upkeep_unknown_total', 'Relay upkeep: of those, events not known because the relay could not be asked or did not reach EOSE in time (never counted lost).'),
    republished: upkeepCounter('aer1_relay_upkeep_republished_total', 'Relay upkeep: lost events published again (the same signed event) and accepted by the relay.'),
  };
}

/** Subjects by witness and status, the oldest pending, the queues' jobs: read from the source at scrape time. */
function subjectGauges(registry: Registry, source: () => GaugeSource | null): void {
  new Gauge({
    name: 'aer1_anchor_subjects',
    help: 'Subjects by witness and witness status; witness="all" carries the overall status.',
    labelNames: ['status', 'witness'],
    registers: [registry],
    async collect() {
      const s = source();
      if (!s) return;
      this.reset();
      for (const [witness, counts] of Object.entries(await s.countByWitness())) {
        for (const [status, n] of Object.entries(counts)) this.set({ witness, status }, n);
      }
      for (const [status, n] of Object.entries(await s.countByStatus())) this.set({ witness: 'all', status }, n);
    },
  });
  new Gauge({
    name: 'aer1_anchor_oldest_pending_seconds',
    help: 'Age of the oldest subject whose witness is not yet confirmed (0 when none).',
    labelNames: ['witness'],
    registers: [registry],
    async collect() {
      const s = source();
      if (!s) return;
      this.reset();
      for (const [witness, age] of Object.entries(await s.oldestUnconfirmedSeconds())) this.set({ witness }, age);
    },
  });
  const queue = new Gauge({
    name: 'aer1_queue_jobs',
    help: 'Jobs in the intake and witness queues by state.',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const s = source();
      if (!s) return;
      const c = await s.queueCounts();
      for (const [state, n] of Object.entries(c)) queue.set({ state }, n);
    },
  });
}

/** Relays and calendars failing, throttled, and their failures in a row: the daemon's witness health at scrape time. */
function endpointGauges(registry: Registry, health: () => (() => EndpointHealth[]) | null): void {
  const endpointGauge = (name: string, help: string, value: (e: EndpointHealth) => number): void => void new Gauge({
    name,
    help,
    labelNames: ['kind', 'url'],
    registers: [registry],
    collect() {
      const read = health();
      if (!read) return;
      this.reset();
      for (const e of read()) this.set({ kind: e.kind, url: e.url }, value(e));
    },
  });
  endpointGauge(
    'aer1_witness_endpoint_failing',
    'Relays and calendars this daemon saw fail several attempts in a row (1 failing, 0 otherwise: ok, throttled or not used yet; an idle failing one is probed again every minute); the same state as /readyz "failing".',
    (e) => (e.state === 'failing' ? 1 : 0),
  );
  endpointGauge(
    'aer1_witness_endpoint_throttled',
    'Relays and calendars answering rate-limited: within the last 5 minutes while not failing (1 throttled, 0 not): back-pressure the publisher meets by waiting; the same state as /readyz "throttled".',
    (e) => (e.state === 'throttled' ? 1 : 0),
  );
  endpointGauge('aer1_witness_endpoint_consecutive_failures', 'Attempts in a row that failed, per relay and calendar (0 after a success).', (e) => e.consecutiveFailures);
}

/** How far back each relay upkeep checks still keeps events on its own. */
function upkeepGauges(registry: Registry, source: () => GaugeSource | null): void {
  const upkeepGauge = (name: string, help: string, value: (oldestHeld: number) => number): void => void new Gauge({
    name,
    help,
    labelNames: ['url'],
    registers: [registry],
    async collect() {
      const s = source();
      if (!s?.relayUpkeep) return;
      this.reset();
      for (const r of await s.relayUpkeep()) if (r.oldestHeld !== null) this.set({ url: displayUrl(r.url) }, value(r.oldestHeld));
    },
  });
  upkeepGauge('aer1_relay_upkeep_oldest_held_timestamp_seconds', 'Relay upkeep: created_at (Unix seconds) of the oldest anchor event the relay (url) still held on its own when last checked: how far back it keeps events.', (t) => t);
  upkeepGauge('aer1_relay_upkeep_oldest_held_age_seconds', 'Relay upkeep: the age of that event now, in seconds.', (t) => Math.max(0, Date.now() / 1000 - t));
}

function redisGauge(registry: Registry, source: () => GaugeSource | null): void {
  new Gauge({
    name: 'aer1_redis_writable',
    help: 'Whether Redis takes writes (1) or refuses them (0: OOM at maxmemory, READONLY replica, MISCONF, a refusal still within its Retry-After); the /readyz probe.',
    registers: [registry],
    async collect() {
      const s = source();
      if (!s?.redisWritable) return;
      this.set((await s.redisWritable()) ? 1 : 0);
    },
  });
}

export class DaemonMetrics {
  readonly registry = new Registry();
  private readonly requests: ReturnType<typeof requestCounters>;
  private readonly subjects: ReturnType<typeof subjectCounters>;
  /** Relay upkeep per relay: events checked, found missing (handed back), unknown (relay not asked), published again and accepted. */
  private readonly upkeepTotals: Record<UpkeepCount, Counter<'url'>>;
  private source: GaugeSource | null = null;
  private health: (() => EndpointHealth[]) | null = null;

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    this.requests = requestCounters(this.registry);
    this.subjects = subjectCounters(this.registry);
    this.upkeepTotals = upkeepCounters(this.registry);
    const source = (): GaugeSource | null => this.source;
    subjectGauges(this.registry, source);
    endpointGauges(this.registry, () => this.health);
    upkeepGauges(this.registry, source);
    redisGauge(this.registry, source);
  }

  /** What the endpoint gauges read at scrape time (the daemon's witness health). */
  attachHealth(read: () => EndpointHealth[]): void {
    this.health = read;
  }

  /** Where the gauges read their numbers at scrape time. */
  attach(source: GaugeSource): void {
    this.source = source;
  }

  /** Creates each counter's series at 0 for the label values known at start. */
  known(labels: KnownLabels): void {
    for (const url of labels.relays) this.requests.relayPublishTotal.inc({ url: displayUrl(url), result: 'accepted' }, 0);
    for (const url of labels.upkeepRelays ?? []) for (const c of Object.values(this.upkeepTotals)) c.inc({ url: displayUrl(url) }, 0);
    for (const url of labels.calendars) this.requests.calendarRequestsTotal.inc({ url: displayUrl(url), result: 'submitted' }, 0);
    for (const kind of labels.repairKinds) this.subjects.repairsTotal.inc({ kind }, 0);
    for (const mode of labels.nostrModes) this.subjects.nostrModeSubjects.inc({ mode }, 0);
    for (const result of ['accepted', 'refused'] as const) this.subjects.intakeTotal.inc({ result }, 0);
    for (const url of labels.tsas ?? []) this.requests.tsaRequestsTotal.inc({ url: displayUrl(url), result: 'token' }, 0);
    for (const url of labels.logWitnesses ?? []) this.requests.logWitnessRequestsTotal.inc({ url: displayUrl(url), result: 'cosigned' }, 0);
    if ((labels.tsas ?? []).length > 0) this.requests.checkpointsBelowQuorum.inc({ kind: 'tsa' }, 0);
    if ((labels.logWitnesses ?? []).length > 0) this.requests.checkpointsBelowQuorum.inc({ kind: 'witness' }, 0);
  }

  tsaRequest(url: string, result: string): void {
    this.requests.tsaRequestsTotal.inc({ url: displayUrl(url), result });
  }

  logWitnessRequest(url: string, result: string): void {
    this.requests.logWitnessRequestsTotal.inc({ url: displayUrl(url), result });
  }

  checkpointBelowQuorum(kind: 'tsa' | 'witness'): void {
    this.requests.checkpointsBelowQuorum.inc({ kind });
  }

  relayPublish(relay: string, result: string): void {
    this.requests.relayPublishTotal.inc({ url: displayUrl(relay), result });
  }

  /** One upkeep pass's share on one relay, or (`republished`) events accepted again. */
  relayUpkeep(relay: string, counts: Partial<Record<UpkeepCount, number>>): void {
    for (const [k, n] of Object.entries(counts) as Array<[UpkeepCount, number]>) if (n > 0) this.upkeepTotals[k].inc({ url: displayUrl(relay) }, n);
  }

  calendarRequest(calendar: string, result: string): void {
    this.requests.calendarRequestsTotal.inc({ url: displayUrl(calendar), result });
  }

  witnessChange(witness: string, status: string, createdMs: number): void {
    if (status === 'confirmed' && createdMs > 0) this.subjects.timeToConfirm.observe({ witness }, Math.max(0, (Date.now() - createdMs) / 1000));
  }

  nostrModeDecision(mode: string, subjects: number): void {
    this.subjects.nostrModeSubjects.inc({ mode }, subjects);
  }

  reconcilerRepairs(kind: string, n: number): void {
    this.subjects.repairsTotal.inc({ kind }, n);
  }

  /** `n` subjects retired from Redis by one retention pass. */
  retentionRetired(n: number): void {
    this.subjects.retiredTotal.inc(n);
  }

  /** `n` subjects (a bulk job counts each of its subjects). */
  intake(result: 'accepted' | 'refused', n = 1): void {
    if (n > 0) this.subjects.intakeTotal.inc({ result }, n);
  }
}
