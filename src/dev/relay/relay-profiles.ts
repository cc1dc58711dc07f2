/**
 * Dev relay profiles: the dev relay behaving as public relays do (WITNESS-FACTS.md, "Nostr,
 * as relays really behave"), each with the NIP-11 document that states it truthfully.
 *
 * | profile      | NIP-11 `limitation`                          | refuses                                                     |
 * | ------------ | -------------------------------------------- | ----------------------------------------------------------- |
 * | `open`       | none                                         | nothing (the default)                                       |
 * | `damus`      | none (damus states no rate either)           | `rate-limited:` past `ratePerMinute` events a minute per key |
 * | `pow`        | `min_pow_difficulty`                         | `pow: difficulty N required` below it (NIP-13 leading zero bits) |
 * | `auth`       | `auth_required: true`                        | `auth-required:` until the connection authenticated (NIP-42) |
 * | `strict`     | `max_message_length`, `created_at_*_limit`   | `invalid:` over the size or outside the window, `restricted:` for kinds it does not know |
 * | `paid`       | `payment_required: true`                     | `restricted: payment required` for every event              |
 * | `restricted` | `restricted_writes: true`                    | `restricted: writes are restricted` for every event         |
 */
import { getPow } from 'nostr-tools/nip13';
import type { SignedEvent } from '../../core/nostr/keys.js';

export const RELAY_PROFILES = ['open', 'damus', 'pow', 'auth', 'strict', 'paid', 'restricted'] as const;
export type RelayProfileName = (typeof RELAY_PROFILES)[number];

export interface RelayProfileOptions {
  /** `damus`: events a minute per pubkey before `rate-limited:` (default 6). */
  ratePerMinute?: number;
  /** `pow`: NIP-13 difficulty asked (default 8). */
  powDifficulty?: number;
  /** `strict`: bytes of one EVENT message (default 65536). */
  maxMessageLength?: number;
  /** `strict`: seconds an event may be older than now (default 3 years, as strfry). */
  createdAtLowerLimit?: number;
  /** `strict`: seconds an event may be ahead of now (default 900, as strfry). */
  createdAtUpperLimit?: number;
  /** `strict`: the kinds it takes (default 0, 1, 3, 5, 6, 7, 1040 and 3099, this project's). */
  allowedKinds?: readonly number[];
  /**
   * `auth`: when the AUTH challenge is sent: `connect` (default, as @nostr-relay/core does)
   * or `demand` (only with the first `auth-required:` answer, as some relays do).
   */
  authChallenge?: 'connect' | 'demand';
}

export interface RelayProfileCounters {
  /** Refusals the profile made, by prefix (`rate-limited`, `pow`, `auth-required`, ...). */
  refused: Record<string, number>;
  /** WebSocket connections accepted so far. */
  connections: number;
  /** NIP-42 AUTH successes on each connection that authenticated (in the order they did). */
  authPerConnection: number[];
}

const MINUTE = 60_000;

export class RelayProfileState {
  readonly name: RelayProfileName;
  readonly ratePerMinute: number;
  readonly powDifficulty: number;
  readonly maxMessageLength: number | undefined;
  readonly createdAtLowerLimit: number | undefined;
  readonly createdAtUpperLimit: number | undefined;
  readonly allowedKinds: ReadonlySet<number> | undefined;
  readonly authChallenge: 'connect' | 'demand';
  private readonly refusedBy: Record<string, number> = {};
  private connectionCount = 0;
  private readonly auths = new Map<string, number>();
  /** Per pubkey: times (ms) of the events taken in the last minute. */
  private readonly writes = new Map<string, number[]>();

  constructor(name: RelayProfileName, o: RelayProfileOptions) {
    if (!(RELAY_PROFILES as readonly string[]).includes(name)) throw new RangeError(`unknown dev relay profile ${JSON.stringify(name)} (one of ${RELAY_PROFILES.join(', ')})`);
    this.name = name;
    this.ratePerMinute = positiveInt(o.ratePerMinute ?? 6, 'ratePerMinute');
    this.powDifficulty = positiveInt(o.powDifficulty ?? 8, 'powDifficulty');
    const strict = name === 'strict';
    this.maxMessageLength = strict ? positiveInt(o.maxMessageLength ?? 65_536, 'maxMessageLength') : undefined;
    this.createdAtLowerLimit = strict ? positiveInt(o.createdAtLowerLimit ?? 94_608_000, 'createdAtLowerLimit') : undefined;
    this.createdAtUpperLimit = strict ? positiveInt(o.createdAtUpperLimit ?? 900, 'createdAtUpperLimit') : undefined;
    this.allowedKinds = strict ? new Set(o.allowedKinds ?? [0, 1, 3, 5, 6, 7, 1040, 3099]) : undefined;
    this.authChallenge = o.authChallenge ?? 'connect';
    if (this.authChallenge !== 'connect' && this.authChallenge !== 'demand') throw new RangeError('authChallenge must be connect or demand');
  }

  /** The refusal for an event (`prefix: reason`), or undefined to take it. `known`: already stored (answered `duplicate:`). */
  check(event: SignedEvent, known: boolean, nowMs = Date.now()): string | undefined {
    const refusal = this.refusal(event, known, nowMs);
    if (refusal !== undefined) this.refused(refusal.slice(0, refusal.indexOf(':')));
    return refusal;
  }

  private refusal(event: SignedEvent, known: boolean, nowMs: number): string | undefined {
    if (event.kind === 22242) return undefined;
    switch (this.name) {
      case 'paid':
        return 'restricted: payment required (see this relay\'s NIP-11 document)';
      case 'restricted':
        return 'restricted: writes are restricted to this relay\'s members';
      case 'pow': {
        const bits = getPow(event.id);
        return bits < this.powDifficulty ? `pow: difficulty ${this.powDifficulty} required (event id has ${bits})` : undefined;
      }
      case 'strict': {
        const now = Math.floor(nowMs / 1000);
        if (event.created_at < now - this.createdAtLowerLimit!) return `invalid: created_at too old (more than ${this.createdAtLowerLimit} s ago)`;
        if (event.created_at > now + this.createdAtUpperLimit!) return `invalid: created_at too far ahead (more than ${this.createdAtUpperLimit} s)`;
        if (!this.allowedKinds!.has(event.kind)) return `restricted: kind ${event.kind} is not accepted here`;
        return undefined;
      }
      case 'damus': {
        if (known) return undefined;
        const recent = (this.writes.get(event.pubkey) ?? []).filter((t) => t > nowMs - MINUTE);
        if (recent.length >= this.ratePerMinute) {
          this.writes.set(event.pubkey, recent);
          return `rate-limited: slow down, at most ${this.ratePerMinute} events a minute per key`;
        }
        recent.push(nowMs);
        this.writes.set(event.pubkey, recent);
        return undefined;
      }
      default:
        return undefined;
    }
  }

  refused(prefix: string): void {
    this.refusedBy[prefix] = (this.refusedBy[prefix] ?? 0) + 1;
  }

  connected(): void {
    this.connectionCount++;
  }

  authenticated(connectionId: string): void {
    this.auths.set(connectionId, (this.auths.get(connectionId) ?? 0) + 1);
  }

  counters(): RelayProfileCounters {
    return { refused: { ...this.refusedBy }, connections: this.connectionCount, authPerConnection: [...this.auths.values()] };
  }
}

/** The NIP-11 document a profile serves: what it enforces, nothing else. */
export function relayInfoDocument(p: RelayProfileState): Record<string, unknown> {
  const limitation: Record<string, unknown> = {};
  if (p.name === 'pow') limitation.min_pow_difficulty = p.powDifficulty;
  if (p.name === 'auth') limitation.auth_required = true;
  if (p.name === 'paid') limitation.payment_required = true;
  if (p.name === 'restricted') limitation.restricted_writes = true;
  if (p.name === 'strict') {
    limitation.max_message_length = p.maxMessageLength;
    limitation.created_at_lower_limit = p.createdAtLowerLimit;
    limitation.created_at_upper_limit = p.createdAtUpperLimit;
  }
  const nips = [1, 11, ...(p.name === 'pow' ? [13] : []), ...(p.name === 'auth' ? [42] : [])];
  return {
    name: `aer1 dev relay (${p.name})`,
    description: `aer1-anchor's development relay playing the "${p.name}" profile`,
    software: 'aer1-anchor dev-relay (@nostr-relay/core)',
    supported_nips: nips,
    ...(Object.keys(limitation).length ? { limitation } : {}),
    ...(p.name === 'paid' ? { payments_url: 'http://127.0.0.1/not-really' } : {}),
  };
}

function positiveInt(v: number, name: string): number {
  if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`${name} must be a positive integer`);
  return v;
}
