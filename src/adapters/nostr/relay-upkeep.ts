/**
 * RelayUpkeep: public relays forget events (about 77 % kept after a year), so a periodic,
 * bounded pass (PeriodicPass, one daemon at a time per shard) walks every anchor event the
 * daemon handed to the relays, `relayUpkeep.perPass` at a time from a cursor in Redis
 * (upkeep-state.ts), and asks each relay that accepted one whether it still holds it: NIP-01
 * REQs with an `ids` filter (`relayUpkeep.idsPerRequest` ids each, read to EOSE within
 * `relayUpkeep.timeoutMs`). An event a relay no longer holds is handed back to that relay's
 * outbox as it is (the same signed event, or the same copy the relay was sent), so the
 * drain sends it within the relay's rate, pauses, NIP-42 and NIP-13 policy. A relay that
 * cannot be asked leaves its events unknown, never lost. docs/evidence.md.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { AnchorStore } from '../state/anchor-store.js';
import type { SigningKey } from '../../core/nostr/keys.js';
import { NIP03_KIND } from '../../core/nostr/nip03.js';
import { sameSignedEvent } from '../../core/nostr/events.js';
import { upkeepQueueName } from '../bullmq/names.js';
import { PeriodicPass, shardPass, type ShardPassDeps } from '../bullmq/periodic-pass.js';
import { RelayClient } from './relay-client.js';
import { boundErrorText } from '../bullmq/failed-attempts.js';
import { scrubUrl } from '../config/display-url.js';
import { RelayOutbox } from './relay-outbox.js';
import { UpkeepState, type KeptEvent, type RelayUpkeepRecord } from './upkeep-state.js';

/**
 * The kinds of anchor event upkeep checks, one line each: envelope and batch events share
 * `nostr.kind`; NIP-03 attestations are kind 1040. An event of another kind stays in the
 * walk unchecked.
 */
export const UPKEEP_EVENT_KINDS: ReadonlyArray<{ name: string; kind: (config: Config) => number }> = [
  { name: 'envelope and batch events', kind: (c) => c.nostr.kind },
  { name: 'NIP-03 attestations', kind: () => NIP03_KIND },
];

const SCHEDULER_ID = 'relay-upkeep';

/** What one pass found on one relay. */
export interface RelayPassResult {
  url: string;
  checked: number;
  /** Not held: handed back to the relay's outbox. */
  missing: number;
  /** The relay could not be asked (or did not reach EOSE in time). */
  unknown: number;
  /** Of the missing, the ones not already waiting to be sent again. */
  requeued: number;
}

export interface RelayUpkeepDeps extends ShardPassDeps {
  config: Config;
  store: AnchorStore;
  key: SigningKey;
  log: Logger;
  /** After each relay's share of a pass (metrics). */
  onChecked?: (result: RelayPassResult) => void;
  now?: () => number;
}

/** One event as one relay should hold it: the id to ask for and the text it was sent. */
interface Expected {
  id: string;
  askId: string;
  text: string;
  createdAt: number;
}

export class RelayUpkeep {
  private readonly deps: RelayUpkeepDeps;
  private readonly cfg: Config['relayUpkeep'];
  private readonly relays: readonly string[];
  private readonly kinds: ReadonlySet<number>;
  readonly state: UpkeepState;
  private readonly outbox: RelayOutbox;
  private readonly periodic: PeriodicPass;
  private readonly log: Logger;
  private readonly now: () => number;

  constructor(deps: RelayUpkeepDeps) {
    this.deps = deps;
    this.cfg = deps.config.relayUpkeep;
    this.relays = deps.config.nostr.relays;
    this.kinds = new Set(UPKEEP_EVENT_KINDS.map((k) => k.kind(deps.config)));
    this.state = new UpkeepState(deps.store);
    this.outbox = new RelayOutbox(deps.store.events, this.relays);
    this.log = deps.log.child({ part: 'relay-upkeep' });
    this.now = deps.now ?? Date.now;
    this.periodic = shardPass(deps, { queueName: upkeepQueueName, schedulerId: SCHEDULER_ID, name: 'relay upkeep', intervalMs: this.cfg.intervalMs, log: this.log, run: () => this.pass() });
  }

  start(): Promise<void> {
    return this.periodic.start();
  }

  close(): Promise<void> {
    return this.periodic.close();
  }

  /** One bounded pass: the next `relayUpkeep.perPass` events on every relay that accepted them. */
  async pass(): Promise<RelayPassResult[]> {
    const { ids, positions, cursor, end } = await this.state.next(this.cfg.perPass);
    const events = await this.state.read(ids, this.relays);
    await this.state.drop(events.flatMap((e, i) => (e.gone ? [{ id: e.id, position: positions[i]! }] : [])));
    const records = await this.state.records(this.relays);
    const at = new Date(this.now()).toISOString();
    const results = await Promise.all(this.relays.map(async (url) => {
      const expected = this.expectedOn(url, events);
      const { held, lost, unknown, error } = await this.ask(url, expected);
      const requeued = await this.outbox.resend(url, lost.map((e) => e.id), this.now());
      const result: RelayPassResult = { url, checked: expected.length, missing: lost.length, unknown: unknown.length, requeued };
      records.set(url, nextRecord(records.get(url) ?? null, result, held, at, error, end));
      this.deps.onChecked?.(result);
      if (lost.length > 0 || error) this.log.info({ relay: url, ...result, error }, 'relay upkeep: events checked');
      return result;
    }));
    await this.state.finish(records as Map<string, RelayUpkeepRecord>, end ? 0 : cursor);
    return results;
  }

  /** The events `url` accepted for good, each as the relay was sent it (the event, or its copy). */
  private expectedOn(url: string, events: readonly KeptEvent[]): Expected[] {
    const out: Expected[] = [];
    for (const e of events) {
      if (e.json === null) continue;
      const mine = e.relays.get(url);
      const report = mine?.report;
      if (!report?.final || (report.status !== 'accepted' && report.status !== 'stored')) continue;
      const text = report.copyId && mine?.copy ? mine.copy : e.json;
      let head: { id?: unknown; kind?: unknown; created_at?: unknown };
      try {
        head = JSON.parse(text) as typeof head;
      } catch {
        continue;
      }
      if (typeof head.kind !== 'number' || !this.kinds.has(head.kind) || typeof head.id !== 'string') continue;
      out.push({ id: e.id, askId: head.id, text, createdAt: typeof head.created_at === 'number' ? head.created_at : 0 });
    }
    return out;
  }

  /**
   * Asks `url` for the events in REQs of `idsPerRequest` ids; the ids a REQ did not return
   * are asked again on their own REQ (a relay capping its answers below what was asked does
   * not make them lost). A REQ that fails leaves its events unknown.
   */
  private async ask(url: string, expected: readonly Expected[]): Promise<{ held: Expected[]; lost: Expected[]; unknown: Expected[]; error: string | null }> {
    const held: Expected[] = [];
    const lost: Expected[] = [];
    const unknown: Expected[] = [];
    let error: string | null = null;
    if (expected.length === 0) return { held, lost, unknown, error };
    const client = new RelayClient(url, { fetchTimeoutMs: this.cfg.timeoutMs, connectTimeoutMs: Math.min(5000, this.cfg.timeoutMs), ping: false, signAuth: (t) => this.deps.key.sign(t), verifyEvents: false });
    try {
      const size = this.cfg.idsPerRequest;
      for (let i = 0; i < expected.length; i += size) {
        const chunk = expected.slice(i, i + size);
        let absent: Expected[];
        try {
          absent = missingFrom(chunk, await client.query({ ids: chunk.map((e) => e.askId), limit: chunk.length }));
          if (absent.length > 0 && absent.length < chunk.length) absent = missingFrom(absent, await client.query({ ids: absent.map((e) => e.askId), limit: absent.length }));
        } catch (err) {
          // one bounded line, the relay named as on /metrics (no credentials or query)
          error = boundErrorText(scrubUrl((err as Error).message, url));
          unknown.push(...expected.slice(i));
          break;
        }
        const gone = new Set(absent);
        for (const e of chunk) (gone.has(e) ? lost : held).push(e);
      }
    } finally {
      client.close();
    }
    return { held, lost, unknown, error };
  }
}

/** The expected events not among the relay's answer (matched by id, then by their signed fields). */
function missingFrom(expected: readonly Expected[], texts: readonly string[]): Expected[] {
  const byId = new Map<string, string>();
  for (const t of texts) {
    const id = /"id"\s*:\s*"([0-9a-f]{64})"/.exec(t)?.[1];
    if (id) byId.set(id, t);
  }
  return expected.filter((e) => {
    const t = byId.get(e.askId);
    return t === undefined || !sameSignedEvent(t, e.text);
  });
}

/** A relay's record after a pass: this round's sums, and at the round's end, the round kept as `last`. */
function nextRecord(prev: RelayUpkeepRecord | null, r: RelayPassResult, held: readonly Expected[], at: string, error: string | null, end: boolean): RelayUpkeepRecord {
  const oldest = held.reduce<number | null>((m, e) => (m === null || e.createdAt < m ? e.createdAt : m), null);
  const cur: RelayUpkeepRecord = {
    checked: (prev?.checked ?? 0) + r.checked,
    missing: (prev?.missing ?? 0) + r.missing,
    unknown: (prev?.unknown ?? 0) + r.unknown,
    oldestHeld: prev?.oldestHeld != null && (oldest === null || prev.oldestHeld < oldest) ? prev.oldestHeld : oldest,
    last: prev?.last ?? null,
    at,
    error,
  };
  if (!end) return cur;
  return { checked: 0, missing: 0, unknown: 0, oldestHeld: null, last: { checked: cur.checked, missing: cur.missing, unknown: cur.unknown, oldestHeld: cur.oldestHeld, at }, at, error };
}
