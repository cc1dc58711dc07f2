/**
 * Relay policies as public relays state and enforce them, for the relay publish job:
 *
 * - NIP-11: each relay's information document (HTTP GET on the ws URL's http(s) form with
 *   `Accept: application/nostr+json`), fetched on first use and again after
 *   `nostr.relayInfoTtlMs`, bounded in time and size. No document (or a broken one) means
 *   no stated limits. What a relay can never take (payment, restricted writes, an event too
 *   long for it) ends that relay's job for the event at once (`final`).
 * - NIP-13: when the document's `min_pow_difficulty` or a `pow:` answer naming a difficulty
 *   asks for it, the relay is sent a copy of the event with a nonce tag mined to that
 *   difficulty (within `nostr.powMaxDifficulty` and `nostr.powBudgetMs`, in slices that
 *   yield to the event loop), re-signed with the daemon's key and kept in the event's state
 *   (`copy:<relay url>`), so a retry or another daemon sends the same copy and the proof can
 *   carry what that relay holds.
 * - A `created_at` outside the relay's stated window: a copy signed at now.
 *
 * NIP-42 AUTH is the RelayClient's (it signs with the key it is given).
 */
import type { AnchorStore } from '../state/anchor-store.js';
import type { SigningKey } from '../../core/nostr/keys.js';
import { serializeEvent, type SignedEvent } from '../../core/nostr/events.js';
import { getPow, PowMiner, powDifficultyNamed, withoutNonce, type PowTemplate } from '../../core/nostr/pow.js';
import { assessEvent, MAX_RELAY_INFO_BYTES, NO_POLICY, parseRelayInfo, type RelayPolicy } from '../../core/nostr/relay-policy.js';
import type { PublishResult, RelayClient } from './relay-client.js';

export interface RelayInfoFetchOptions {
  /** Whole request, body included (default 3000 ms). */
  timeoutMs?: number;
  /** Most body bytes read (default MAX_RELAY_INFO_BYTES). */
  maxBytes?: number;
}

/** The relay's NIP-11 URL: the ws URL with http(s) in place of ws(s). */
export function relayInfoUrl(relayUrl: string): string {
  const u = new URL(relayUrl);
  u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
  return u.toString();
}

/**
 * Fetches and parses a relay's NIP-11 document. Never rejects: a relay that does not answer
 * in time, answers an error status, sends more than `maxBytes` or sends no JSON object has
 * no stated limits (`ignored` says what happened).
 */
export async function fetchRelayPolicy(relayUrl: string, options: RelayInfoFetchOptions = {}): Promise<RelayPolicy> {
  const timeoutMs = options.timeoutMs ?? 3000;
  const maxBytes = Math.min(options.maxBytes ?? MAX_RELAY_INFO_BYTES, MAX_RELAY_INFO_BYTES);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    const res = await fetch(relayInfoUrl(relayUrl), { headers: { Accept: 'application/nostr+json' }, signal: controller.signal, redirect: 'error' });
    if (!res.ok || !res.body) {
      await res.body?.cancel().catch(() => undefined);
      return { ignored: [`no document (HTTP ${res.status})`] };
    }
    const reader = res.body.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => undefined);
        return { ignored: [`document over ${maxBytes} bytes`] };
      }
      chunks.push(value);
    }
    return parseRelayInfo(Buffer.concat(chunks).toString('utf8'));
  } catch (err) {
    return { ignored: [controller.signal.aborted ? `no document within ${timeoutMs} ms` : `no document (${(err as Error).message})`], unreachable: true };
  } finally {
    clearTimeout(timer);
  }
}

/** How soon a document that could not be fetched at all (relay down, no answer) is asked for again. */
export const UNREACHABLE_INFO_TTL_MS = 60_000;

/**
 * NIP-11 policies per relay URL, fetched on first use and refreshed after `ttlMs` (one fetch
 * at a time per relay); a relay whose document could not be fetched is asked again after at
 * most UNREACHABLE_INFO_TTL_MS, so a relay that was down at start-up has its limits read soon.
 */
export class RelayPolicies {
  private readonly entries = new Map<string, { policy: RelayPolicy; until: number }>();
  private readonly fetching = new Map<string, Promise<RelayPolicy>>();

  constructor(
    private readonly ttlMs: number,
    private readonly fetchOptions: RelayInfoFetchOptions = {},
    private readonly fetchPolicy: (url: string, o: RelayInfoFetchOptions) => Promise<RelayPolicy> = fetchRelayPolicy,
    private readonly unreachableTtlMs = UNREACHABLE_INFO_TTL_MS,
  ) {}

  /** The cached policy, or a fresh one when there is none or it is older than the TTL. */
  async get(url: string): Promise<RelayPolicy> {
    const hit = this.entries.get(url);
    if (hit && Date.now() < hit.until) return hit.policy;
    let running = this.fetching.get(url);
    if (!running) {
      running = this.fetchPolicy(url, this.fetchOptions)
        .catch((): RelayPolicy => NO_POLICY)
        .then((policy) => {
          this.entries.set(url, { policy, until: Date.now() + (policy.unreachable ? Math.min(this.ttlMs, this.unreachableTtlMs) : this.ttlMs) });
          return policy;
        })
        .finally(() => this.fetching.delete(url));
      this.fetching.set(url, running);
    }
    return running;
  }
}

export interface PolicyPublishOptions {
  /** nostr.powMaxDifficulty: a relay asking more is failed for the event. */
  powMaxDifficulty: number;
  /** nostr.powBudgetMs: longest mining of one copy. */
  powBudgetMs: number;
  /** nostr.relayInfoTtlMs */
  relayInfoTtlMs: number;
  publishTimeoutMs: number;
  relayInfoTimeoutMs?: number;
}

/** What one publish job got: the relay's answer for the event actually sent, or a final policy failure. */
export type PolicyOutcome =
  | { result: PublishResult; sent: SignedEvent; pow: number }
  | { final: string; at: string; pow?: number };

/** Hashes per slice between yields to the event loop (a few ms each). */
const SLICE_HASHES = 4096;

export class PolicyPublisher {
  readonly policies: RelayPolicies;
  /**
   * Per relay: the highest difficulty a `pow:` answer named, until `nostr.relayInfoTtlMs` after
   * the last such answer (in memory; NIP-11 is the lasting source, and a relay that asks only
   * under load — nos.lol — stops asking).
   */
  private readonly asked = new Map<string, { bits: number; until: number }>();
  /** One mining at a time in this process: each gets the whole core for its budget (jobs wait their turn). */
  private mining: Promise<unknown> = Promise.resolve();
  private stopping = false;

  constructor(
    private readonly store: AnchorStore,
    private readonly key: SigningKey,
    private readonly opts: PolicyPublishOptions,
    policies?: RelayPolicies,
  ) {
    this.policies = policies ?? new RelayPolicies(opts.relayInfoTtlMs, { timeoutMs: opts.relayInfoTimeoutMs ?? 3000 });
  }

  /**
   * One publish of `event` on `url` as the relay's policy requires: checks the NIP-11 limits,
   * sends the event or its mined / re-dated copy, and after a `pow:` answer naming a higher
   * difficulty mines again and sends once more (at most once per job).
   */
  async publish(url: string, client: RelayClient, event: SignedEvent): Promise<PolicyOutcome> {
    const policy = await this.policies.get(url);
    const learnt = this.asked.get(url);
    if (learnt && Date.now() >= learnt.until) this.asked.delete(url);
    let needed = Math.max(policy.minPowDifficulty ?? 0, this.asked.get(url)?.bits ?? 0);
    for (let round = 0; ; round++) {
      const verdict = assessEvent(policy, event, Math.floor(Date.now() / 1000), needed);
      if (!verdict.send) return { final: verdict.reason, at: new Date().toISOString() };
      if (verdict.pow > this.opts.powMaxDifficulty) {
        return { final: `relay asks proof of work of ${verdict.pow} bits, above nostr.powMaxDifficulty ${this.opts.powMaxDifficulty}`, at: new Date().toISOString() };
      }
      let sent = event;
      if (verdict.pow > 0 || verdict.refreshCreatedAt) {
        const copy = await this.copyFor(url, event, verdict.pow, verdict.refreshCreatedAt);
        if ('final' in copy) return { final: copy.final, at: new Date().toISOString(), pow: verdict.pow };
        sent = copy.event;
      }
      const result = await client.publish(sent, { timeoutMs: this.opts.publishTimeoutMs });
      // what was mined (a re-dated copy without a nonce has only the id's chance zero bits)
      const pow = verdict.pow > 0 && sent !== event ? getPow(sent.id) : 0;
      if (result.status === 'rejected' && result.prefix === 'pow' && round === 0) {
        const named = powDifficultyNamed(result.message);
        if (named !== undefined && named > pow) {
          this.asked.set(url, { bits: Math.max(named, this.asked.get(url)?.bits ?? 0), until: Date.now() + this.opts.relayInfoTtlMs });
          needed = named;
          continue;
        }
      }
      return { result, sent, pow };
    }
  }

  /** The relay's stored copy when it still meets `pow` (and the window), else a new one mined, signed and stored. */
  private async copyFor(url: string, event: SignedEvent, pow: number, refresh: boolean): Promise<{ event: SignedEvent } | { final: string }> {
    const stored = await this.store.events.relayCopy(event.id, url);
    if (stored) {
      const copy = JSON.parse(stored) as SignedEvent;
      if (getPow(copy.id) >= pow && (refresh ? copy.created_at !== event.created_at : copy.created_at === event.created_at)) return { event: copy };
    }
    const template = { pubkey: event.pubkey, created_at: refresh ? Math.floor(Date.now() / 1000) : event.created_at, kind: event.kind, tags: withoutNonce(event.tags), content: event.content };
    let tags = template.tags;
    if (pow > 0) {
      const mined = await this.exclusive(() => this.mine(template, pow));
      if ('final' in mined) return mined;
      tags = mined.tags;
    }
    const copy = this.key.sign({ kind: template.kind, created_at: template.created_at, tags, content: template.content });
    await this.store.events.setRelayCopy(event.id, url, serializeEvent(copy));
    return { event: copy };
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.mining.then(fn, fn);
    this.mining = run.catch(() => undefined);
    return run;
  }

  /** Mines `template` to `pow` bits in slices, yielding between them, within nostr.powBudgetMs. */
  private async mine(template: PowTemplate, pow: number): Promise<{ tags: string[][] } | { final: string }> {
    const miner = new PowMiner(template, pow);
    const started = Date.now();
    for (;;) {
      // the daemon is stopping: the job goes back to its queue (one attempt spent), mined again later
      if (this.stopping) throw new Error('proof of work interrupted: the daemon is stopping');
      const mined = miner.step(SLICE_HASHES);
      if (mined) return { tags: mined.tags };
      const spent = Date.now() - started;
      if (spent >= this.opts.powBudgetMs) {
        return { final: `proof of work of ${pow} bits not found within nostr.powBudgetMs ${this.opts.powBudgetMs} ms (${miner.hashes} hashes)` };
      }
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** Ends any mining under way and refuses new mining (the daemon is stopping). */
  stop(): void {
    this.stopping = true;
  }
}

/** The copy of `eventId` a relay was sent instead of it (proof of work, re-dated), or null. */
export async function relayCopyJson(store: AnchorStore, eventId: string, url: string): Promise<string | null> {
  return store.events.relayCopy(eventId, url);
}
