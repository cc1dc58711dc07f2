/**
 * NostrRegistry: small numbers for what every stored event would otherwise repeat in full
 * (`{prefix}:nostr:reg`, keys.ts): a relay's URL in its report field (`r:<n>`) and in the
 * relays an event was handed to (`to`), and a subject event's signer (its public key and
 * kind, `sg`). A number, once given, names the same value for good, so each daemon keeps
 * what it learnt in memory and asks Redis only for what it has not seen.
 */
import type { RedisClient as Redis } from '../redis/connection.js';
import type { StateKeys } from './keys.js';
import { DIR, defineScripts, load, runScript } from './scripts.js';

/** Assigns the numbers (register.lua). */
export const REGISTER = load(DIR, 'register');

type Namespace = 'u' | 's';

export interface Signer {
  pubkey: string;
  kind: number;
}

export class NostrRegistry {
  private readonly numbers: Record<Namespace, Map<string, number>> = { u: new Map(), s: new Map() };
  private readonly values: Record<Namespace, Map<number, string>> = { u: new Map(), s: new Map() };

  constructor(private readonly redis: Redis, private readonly keys: StateKeys) {
    defineScripts(redis, [REGISTER]);
  }

  /** The relays' numbers, registering any not numbered yet (one script call for those). */
  relayNumbers(urls: readonly string[]): Promise<number[]> {
    return this.numbersOf('u', urls);
  }

  /** The URLs of relay numbers; null for a number the registry does not hold. */
  relayUrls(ns: readonly number[]): Promise<Array<string | null>> {
    return this.valuesOf('u', ns);
  }

  async signerNumber(s: Signer): Promise<number> {
    return (await this.numbersOf('s', [`${s.pubkey}:${s.kind}`]))[0]!;
  }

  async signer(n: number): Promise<Signer | null> {
    const v = (await this.valuesOf('s', [n]))[0];
    if (!v) return null;
    const [pubkey, kind] = v.split(':');
    return { pubkey: pubkey!, kind: Number(kind) };
  }

  private async numbersOf(ns: Namespace, values: readonly string[]): Promise<number[]> {
    const known = this.numbers[ns];
    const missing = [...new Set(values.filter((v) => !known.has(v)))];
    if (missing.length > 0) {
      const got = (await runScript(this.redis, REGISTER, [this.keys.nostrRegistry], [ns, ...missing])) as number[];
      missing.forEach((v, i) => this.learn(ns, v, Number(got[i])));
    }
    return values.map((v) => known.get(v)!);
  }

  private async valuesOf(ns: Namespace, ids: readonly number[]): Promise<Array<string | null>> {
    const known = this.values[ns];
    const missing = [...new Set(ids.filter((n) => !known.has(n)))];
    if (missing.length > 0) {
      const got = await this.redis.hmget(this.keys.nostrRegistry, ...missing.map((n) => `${ns}#${n}`));
      missing.forEach((n, i) => {
        const v = got[i];
        if (v !== null && v !== undefined) this.learn(ns, v, n);
      });
    }
    return ids.map((n) => known.get(n) ?? null);
  }

  private learn(ns: Namespace, value: string, n: number): void {
    this.numbers[ns].set(value, n);
    this.values[ns].set(n, value);
  }
}
