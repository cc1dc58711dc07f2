/**
 * RelayDrains: each relay's drain in this daemon. A drain takes due groups of events from its
 * relay's outbox (relay-outbox.ts) and publishes them over one connection, as the relay's
 * stated policy requires (relay-policy.ts); then it records the group's reports in one call,
 * moves the witnesses they changed in one call per kind of move, and takes the events answered
 * for good out of the outbox. NostrWitness (nostr-witness.ts) queues the events, decides the
 * batches and repairs; this is where they are sent.
 */
import type { Logger } from 'pino';
import type { AnchorStore } from '../state/anchor-store.js';
import type { RelayReportRecord } from '../state/events.js';
import type { WitnessStatus } from '../../core/proof/format.js';
import { backoffDelay } from '../../core/retry/backoff.js';
import { boundErrorText } from '../bullmq/failed-attempts.js';
import { sameSignedEvent, type SignedEvent } from '../../core/nostr/events.js';
import type { SigningKey } from '../../core/nostr/keys.js';
import { RelayClient } from './relay-client.js';
import { PolicyPublisher } from './relay-policy.js';
import type { RelayOutbox, RecordedReports } from './relay-outbox.js';
import { ParsedEvents } from './parsed-events.js';
import type { UpkeepState } from './upkeep-state.js';
import type { NostrWitnessHooks, NostrWitnessOptions } from './nostr-witness.js';

/** An idle drain looks for events other daemons queued this often (its own wake it at once). */
const IDLE_POLL_MS = 500;
/** Most events one drain takes at once, as a multiple of nostr.concurrency (the publishes in flight). */
const GROUP_PER_CONCURRENCY = 4;
const GROUP_MAX = 500;
/** Events held parsed for the relays still to read them (parsed-events.ts): a few groups' worth. */
const PARSED_MAX = 1024;
/** A drain whose Redis calls fail waits from this, doubling, up to DRAIN_ERROR_MAX_MS. */
const DRAIN_ERROR_MS = 200;
const DRAIN_ERROR_MAX_MS = 5000;

/** What one publish attempt on one relay came to: the report, and when the event is due again if not final. */
interface Attempt {
  id: string;
  report: RelayReportRecord;
  /** Not final: send again at this time (a retry's backoff, or the end of a rate-limited pause). */
  againAtMs?: number;
  /** A `rate-limited:` answer: pause the relay this long. */
  pauseMs?: number;
}

/** One relay's drain in this daemon: its wake-up and the loop's promise. */
interface Drain {
  wake: () => void;
  done: Promise<void>;
}

/**
 * Witness status of an event from its relays' reports (SPEC 4.1), with a monotonic progress
 * number. `confirmed` once `quorum` relays accepted. `failed` as soon as the quorum is out of
 * reach: the relays that refused for good (`invalid:`, `blocked:`, `restricted:`, ...) or were
 * given up on (retries exhausted) leave fewer than `quorum` that could still accept. That holds
 * even when some relays accepted (the event is on them, and the proof lists them): `partial`
 * means "still on its way to the quorum", and a quorum no relay can complete is not. `reason`
 * says why, naming each relay that closed the way. A witness failed only through relays given
 * up on can still move on: the reconciler gives those a new round (never the final refusals).
 */
export function nostrStatusOf(reports: readonly RelayReportRecord[], relayCount: number, quorum: number): { status: WitnessStatus; progress: number; reason?: string } {
  let accepted = 0;
  let finished = 0;
  const closed: RelayReportRecord[] = [];
  for (const r of reports) {
    const ok = r.status === 'accepted' || r.status === 'stored';
    if (ok) accepted++;
    if (r.final) finished++;
    if (r.final && !ok) closed.push(r);
  }
  const progress = accepted * 1000 + finished;
  if (accepted >= quorum) return { status: 'confirmed', progress };
  if (relayCount - closed.length < quorum) {
    const why = closed.map((r) => `${r.url}: ${r.status}${r.message ? ` (${r.message})` : ''}`).join('; ');
    return { status: 'failed', progress, reason: `quorum ${quorum} unreachable: ${accepted} of ${relayCount} relays accepted, ${closed.length} closed for good: ${why}` };
  }
  if (accepted > 0) return { status: 'partial', progress };
  return { status: 'pending', progress };
}

export class RelayDrains {
  private readonly drains = new Map<string, Drain>();
  private stopped = false;
  private readonly clients = new Map<string, RelayClient>();
  /** Per relay: `rate-limited:` pauses in a row (reset by an acceptance) and when the current one ends. */
  private readonly pauses = new Map<string, { streak: number; until: number }>();
  /** NIP-11 limits, NIP-13 copies: what each relay is sent (relay-policy.ts). */
  private readonly policy: PolicyPublisher;
  /** Each event's stored JSON parsed once for all the relays. */
  private readonly parsed: ParsedEvents;

  /** `kept`: relay upkeep's walk of every event handed to the relays (null: relayUpkeep off). */
  constructor(
    private readonly opts: NostrWitnessOptions,
    private readonly store: AnchorStore,
    private readonly key: SigningKey,
    private readonly log: Logger,
    private readonly hooks: NostrWitnessHooks,
    private readonly outbox: RelayOutbox,
    private readonly kept: UpkeepState | null,
  ) {
    this.policy = new PolicyPublisher(store, key, opts);
    this.parsed = new ParsedEvents(opts.relays.length, PARSED_MAX);
  }

  /** Starts each relay's drain. */
  start(): void {
    for (const url of this.opts.relays) {
      // read each relay's NIP-11 limits ahead of its first group (never rejects)
      void this.policy.policies.get(url);
      let wakeUp: (() => void) | null = null;
      let woken = false;
      const drain: Drain = {
        wake: () => {
          woken = true;
          wakeUp?.();
        },
        done: Promise.resolve(),
      };
      const sleep = (ms: number): Promise<void> =>
        new Promise<void>((resolve) => {
          if (woken || this.stopped) {
            woken = false;
            resolve();
            return;
          }
          const t = setTimeout(done, ms);
          function done(): void {
            clearTimeout(t);
            wakeUp = null;
            woken = false;
            resolve();
          }
          wakeUp = done;
        });
      drain.done = this.drain(url, sleep);
      this.drains.set(url, drain);
    }
  }

  /** Wakes the drain of `url`, or of every relay: events were queued for it. */
  wake(url?: string): void {
    if (url !== undefined) this.drains.get(url)?.wake();
    else for (const d of this.drains.values()) d.wake();
  }

  private client(url: string): RelayClient {
    let c = this.clients.get(url);
    if (!c) {
      c = new RelayClient(url, { publishTimeoutMs: this.opts.publishTimeoutMs, signAuth: (t) => this.key.sign(t) });
      this.clients.set(url, c);
    }
    return c;
  }

  /** Lease on a taken group: a daemon that dies hands it back this long after its last renewal. */
  private get leaseMs(): number {
    return Math.max(this.opts.stalledIntervalMs, 5000);
  }

  /** One relay's drain: takes due groups from its outbox until the daemon stops. */
  private async drain(url: string, sleep: (ms: number) => Promise<void>): Promise<void> {
    const most = Math.min(GROUP_MAX, this.opts.concurrency * GROUP_PER_CONCURRENCY);
    let errors = 0;
    while (!this.stopped) {
      // while Redis refuses writes the shared backoff holds every worker: the drains wait with them
      if (this.opts.refusals?.holding) {
        await sleep(IDLE_POLL_MS);
        continue;
      }
      let waitMs: number;
      try {
        const taken = await this.outbox.take(url, Date.now(), most, this.leaseMs, this.opts.ratePerMinute);
        errors = 0;
        if ('ids' in taken) {
          await this.publishGroup(url, taken.ids);
          continue;
        }
        waitMs = taken.waitMs === null ? IDLE_POLL_MS : Math.min(taken.waitMs, IDLE_POLL_MS);
      } catch (err) {
        // Redis refusing or away: what was taken stays leased and comes back; no attempt is spent
        errors++;
        waitMs = backoffDelay(errors, DRAIN_ERROR_MS, DRAIN_ERROR_MAX_MS);
        // a refusal goes to the shared backoff (one line for the condition), anything else to the log
        if (!this.stopped && !this.opts.refusals?.refused(err)) this.log.warn({ relay: url, err }, 'relay drain: Redis call failed; the group comes back when its lease ends');
      }
      await sleep(waitMs);
    }
  }

  /**
   * Publishes a group on one relay (nostr.concurrency at a time over its one connection), then
   * records every report in one call, moves the witnesses that changed in one call per kind
   * of move, and takes the events answered for good out of the outbox. A crash anywhere
   * leaves the group leased: when the lease ends it is taken again, and an event whose report
   * is already final only has its witness move redone.
   */
  private async publishGroup(url: string, ids: readonly string[]): Promise<void> {
    const renew = setInterval(() => {
      void this.outbox.renew(url, ids, Date.now() + this.leaseMs).catch((err: unknown) => this.log.warn({ relay: url, err }, 'relay drain: lease renewal failed'));
    }, Math.max(200, Math.floor(this.leaseMs / 3)));
    try {
      const rows = await this.outbox.read(url, ids);
      const attempts: Attempt[] = [];
      const finished: string[] = [];
      const redo: string[] = [];
      let next = 0;
      // a rate-limited: answer pauses the relay: nothing more of this group is sent until it ends
      let pausedUntil = 0;
      const worker = async (): Promise<void> => {
        while (next < ids.length && !this.stopped && pausedUntil === 0) {
          const i = next++;
          const id = ids[i]!;
          const { event: stored, report, resend } = rows[i]!;
          if ('broken' in stored) {
            // a subject event its envelope no longer rebuilds: final for this relay, with the reason; nothing else held up
            if (!report?.final) attempts.push({ id, report: { url, status: 'failed', message: boundErrorText(`the stored event cannot be rebuilt: ${stored.broken}`), at: new Date().toISOString(), attempts: 0, final: true } });
            else finished.push(id);
            continue;
          }
          const json = stored.json;
          if (json === null) {
            this.log.error({ eventId: id, relay: url }, 'event missing from state; nothing to publish');
            finished.push(id);
            continue;
          }
          if (report?.final && resend === null) {
            // A crash between recording the report and moving the witness left the move undone: redo it (idempotent).
            redo.push(id);
            continue;
          }
          let event: SignedEvent;
          try {
            event = this.parsed.parse(id, json);
          } catch {
            // nothing any relay could take: final for this relay rather than a retry for ever
            attempts.push({ id, report: { url, status: 'failed', message: 'the stored event is not valid JSON', at: new Date().toISOString(), attempts: 0, final: true } });
            continue;
          }
          try {
            // sent again after relay upkeep found it lost: a round of attempts of its own, the acceptance kept
            const a = await this.attempt(url, id, event, resend !== null && report ? { ...report, final: false, attempts: resend } : report);
            // a relay's reason is its own words, of any length: the report keeps a bounded prefix
            a.report.message = boundErrorText(a.report.message);
            attempts.push(a);
            if (a.pauseMs !== undefined) pausedUntil = Math.max(pausedUntil, a.againAtMs!);
          } catch (err) {
            // our own failure (Redis, mining stopped): no report; the event comes back when its lease ends
            this.log.warn({ relay: url, eventId: id, err }, 'relay publish not attempted; left in the outbox');
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.opts.concurrency, ids.length) }, worker));
      const resent = new Set(ids.filter((_, i) => rows[i]!.resend !== null));
      const republished = attempts.filter((a) => resent.has(a.id) && (a.report.status === 'accepted' || a.report.status === 'stored')).length;
      await this.outbox.resendTried(url, attempts.filter((a) => resent.has(a.id) && !a.report.final).map((a) => ({ id: a.id, attempts: a.report.attempts ?? 0 })));
      const recorded = await this.outbox.record(url, attempts);
      await this.moveWitnesses(attempts.map((a, i) => ({ id: a.id, report: a.report, recorded: recorded[i]! })));
      for (const id of redo) {
        const reports = await this.store.events.relayReports(id);
        const mine = reports.find((r) => r.url === url);
        if (mine) await this.moveWitness(id, reports, mine);
      }
      const pauses = attempts.filter((a) => a.pauseMs !== undefined);
      if (pauses.length > 0) await this.outbox.pause(url, Math.max(...pauses.map((a) => a.pauseMs!)));
      await this.outbox.later(url, attempts.filter((a) => a.againAtMs !== undefined).map((a) => ({ id: a.id, atMs: a.againAtMs! })));
      await this.outbox.done(url, [...finished, ...redo, ...attempts.filter((a) => a.report.final).map((a) => a.id)]);
      if (republished > 0) {
        await this.kept?.countRepublished(url, republished);
        this.hooks.onRepublished?.(url, republished);
      }
      if (this.stopped || pausedUntil > 0) {
        // the events not tried: due again when the pause ends, or now when stopping (for another daemon or the next start)
        const handled = new Set([...finished, ...redo, ...attempts.map((a) => a.id)]);
        const at = this.stopped ? Date.now() : pausedUntil;
        await this.outbox.later(url, ids.filter((id) => !handled.has(id)).map((id) => ({ id, atMs: at })));
      }
    } finally {
      clearInterval(renew);
    }
  }

  /** One publish of one event on one relay, as its policy requires: the report, and when to send again if not final. */
  private async attempt(url: string, id: string, event: SignedEvent, existing: RelayReportRecord | undefined): Promise<Attempt> {
    // a report not final carries the attempts spent so far (a reopened relay's: 0)
    const spent = existing && !existing.final ? (existing.attempts ?? 0) : 0;
    const attempt = spent + 1;
    const outcome = await this.policy.publish(url, this.client(url), event);
    if ('final' in outcome) {
      // The relay's stated policy can never take this event (payment, restricted writes, too long, proof of work over the cap)
      this.hooks.onPublish?.(url, 'rejected:policy', outcome.final);
      return { id, report: { url, status: 'failed', message: outcome.final, at: outcome.at, attempts: attempt, final: true, prefix: 'policy', ...(outcome.pow ? { pow: outcome.pow } : {}) } };
    }
    const { result, sent } = outcome;
    // the copy this relay was sent (mined or re-dated), when not the event itself
    const copy = sent.id !== event.id ? { copyId: sent.id, ...(outcome.pow > 0 ? { pow: outcome.pow } : {}) } : {};
    this.hooks.onPublish?.(url, result.status === 'rejected' ? `rejected:${result.prefix ?? 'unknown'}` : result.status, result.message);
    if (result.status === 'accepted') {
      this.pauses.delete(url);
      let status = 'accepted';
      let message = result.message;
      if (this.opts.readBack) {
        // Acceptance stands either way; read-back only upgrades it to "stored" when the bytes match.
        let back: string | null = null;
        let failure = '';
        try {
          back = await this.client(url).fetchById(sent.id, { timeoutMs: this.opts.publishTimeoutMs });
        } catch (err) {
          failure = (err as Error).message;
        }
        if (back !== null && sameSignedEvent(back, sent)) status = 'stored';
        else message = `${message}${message ? '; ' : ''}read-back ${failure ? `failed: ${failure}` : back === null ? 'found nothing' : 'differs'}`;
      }
      return { id, report: { url, status, message, at: result.at, attempts: attempt, final: true, ...copy } };
    }
    if (result.status === 'rejected' && result.prefix === 'rate-limited') {
      // The limit is on our key, not this event: pause the relay's whole outbox (every daemon's
      // drain of it) and send this event again afterwards, without spending an attempt.
      const pauseMs = this.pauseFor(url);
      return { id, report: { url, status: result.status, message: result.message, at: result.at, attempts: spent, final: false, prefix: result.prefix }, pauseMs, againAtMs: Date.now() + pauseMs };
    }
    if (result.retryable && attempt < this.opts.maxAttempts) {
      const againAtMs = Date.now() + backoffDelay(attempt, this.opts.backoffMs, this.opts.backoffMaxMs);
      return { id, report: { url, status: result.status, message: result.message, at: result.at, attempts: attempt, final: false, ...(result.prefix ? { prefix: result.prefix } : {}), ...copy }, againAtMs };
    }
    // Not retryable (invalid:, blocked:, ...) or out of attempts: final for this relay.
    const gaveUp = result.retryable ? `gave up after ${attempt} attempts: ` : '';
    return {
      id,
      report: { url, status: result.retryable ? 'failed' : 'rejected', message: `${gaveUp}${result.message}`, at: result.at, attempts: attempt, final: true, ...(result.prefix ? { prefix: result.prefix } : {}), ...copy },
    };
  }

  /**
   * How long a `rate-limited:` answer pauses this relay: nostr.rateLimitBackoffMs, doubled for
   * each pause in a row (answers arriving while one pause runs, from publishes already in
   * flight, do not double it again), capped at nostr.backoffMaxMs or the base if larger.
   */
  private pauseFor(url: string): number {
    const now = Date.now();
    const p = this.pauses.get(url) ?? { streak: 0, until: 0 };
    const base = this.opts.rateLimitBackoffMs;
    const cap = Math.max(base, this.opts.backoffMaxMs);
    if (now >= p.until) {
      p.streak++;
      // no jitter: the relay asked for at least this long
      p.until = now + backoffDelay(p.streak, base, cap, { jitter: 0 });
      this.pauses.set(url, p);
    }
    return Math.max(1, p.until - now);
  }

  /**
   * Moves the witnesses a group's reports changed: a report that leaves the event's status as
   * it was moves nothing (its detail stays in the event's relay reports, as for batches); the
   * subjects' own events that moved alike share one set-witness call; a batch event moves its
   * batch's subjects, as moveWitness does.
   */
  private async moveWitnesses(items: ReadonlyArray<{ id: string; report: RelayReportRecord; recorded: RecordedReports }>): Promise<void> {
    const groups = new Map<string, { status: WitnessStatus; progress: number; detail: string; relay: string; keys: string[] }>();
    for (const { id, report, recorded } of items) {
      if (recorded.gone) continue;
      const { reports, previous } = recorded;
      const without = reports.filter((r) => r.url !== report.url);
      const before = nostrStatusOf(previous ? [...without, previous] : without, this.opts.relays.length, this.opts.quorum);
      const after = nostrStatusOf(reports, this.opts.relays.length, this.opts.quorum);
      // a report that leaves the status as it was (a third relay accepting) stays on the event only
      if (before.status === after.status) continue;
      const mine = reports.find((r) => r.url === report.url) ?? report;
      if (!recorded.subject) {
        await this.moveWitness(id, reports, mine);
        continue;
      }
      const detail = after.reason ?? `${mine.url}: ${mine.status}${mine.message ? ` (${mine.message})` : ''}`;
      const group = `${after.status} ${after.progress} ${detail}`;
      const g = groups.get(group) ?? { status: after.status, progress: after.progress, detail, relay: mine.url, keys: [] };
      g.keys.push(recorded.subject);
      groups.set(group, g);
    }
    for (const g of groups.values()) {
      const changes = await this.store.subjects.setWitnessMany(g.keys, 'nostr', g.status, g.progress, g.detail, undefined, g.relay);
      changes.forEach((c, i) => {
        if (c.changed) this.hooks.onWitnessChange?.(g.keys[i]!, g.status, c.createdMs);
      });
    }
  }

  /** Moves the witness of every subject the event carries to what its relays' reports say. */
  async moveWitness(eventId: string, reports: readonly RelayReportRecord[], report: RelayReportRecord, unchanged = false): Promise<void> {
    const { status, progress, reason } = nostrStatusOf(reports, this.opts.relays.length, this.opts.quorum);
    const owner = await this.store.events.eventOwner(eventId);
    if (unchanged && !owner.subject) return;
    const keys = owner.subject ? [owner.subject] : owner.batch ? await this.store.batches.batchKeys('nostr', owner.batch) : [];
    const detail = reason ?? `${report.url}: ${report.status}${report.message ? ` (${report.message})` : ''}`;
    const changes = await this.store.subjects.setWitnessMany(keys, 'nostr', status, progress, detail, owner.subject ? undefined : (owner.batch ?? undefined), report.url);
    changes.forEach((c, i) => {
      if (c.changed) this.hooks.onWitnessChange?.(keys[i]!, status, c.createdMs);
    });
  }

  /** Stops taking groups; resolves once the publishes in flight finished (or their events come back when their lease ends). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.policy.stop();
    this.wake();
    await Promise.all([...this.drains.values()].map((d) => d.done));
  }

  /** Closes the relay connections (after stop). */
  closeConnections(): void {
    for (const c of this.clients.values()) c.close();
  }
}
