/**
 * The flags that find anchors on relays without a proof (`--relay`, `--expected-pubkey`,
 * `--kind`, `--require-anchored`), shared by `aer1-verify-anchor` and `aer1-anchor audit`.
 */
import { discoverAnchors, type DiscoveryReport } from '../../core/verify/discover.js';
import type { RelayFetcher } from '../../core/verify/online.js';
import type { VerifyOptions } from '../../core/verify/pipeline.js';
import { DEFAULT_EVENT_KIND } from '../../core/nostr/events.js';
import { UsageError } from './run.js';

/** `--kind N` (repeatable): regular kinds in 1000..9999; default the daemon's default kind. */
export function parseKinds(values: readonly string[] | undefined): number[] {
  if (!values?.length) return [DEFAULT_EVENT_KIND];
  return values.map((v) => {
    const n = /^\d{4}$/.test(v.trim()) ? Number(v.trim()) : NaN;
    if (!(n >= 1000 && n <= 9999)) throw new UsageError(`--kind must be an event kind in 1000..9999, got ${JSON.stringify(v.slice(0, 20))}`);
    return n;
  });
}

/** `--relay URL` (repeatable): ws:// or wss:// URLs, each named once. */
export function parseRelays(values: readonly string[] | undefined): string[] {
  const out: string[] = [];
  for (const v of values ?? []) {
    let url: URL;
    try {
      url = new URL(v);
    } catch {
      throw new UsageError(`--relay ${JSON.stringify(v.slice(0, 100))} is not a URL`);
    }
    if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new UsageError(`--relay ${JSON.stringify(v.slice(0, 100))} must be a ws:// or wss:// URL`);
    // a URL is printed on lines of its own: no control or space characters (the URL parser would drop some silently)
    if (/[\u0000-\u0020\u007f-\u009f]/.test(v)) throw new UsageError(`--relay ${JSON.stringify(v.slice(0, 100))} carries control or space characters`);
    if (!out.includes(v)) out.push(v);
  }
  return out;
}

interface DiscoveryFlags {
  online?: boolean;
  relay?: string[];
  'require-anchored'?: boolean;
}

/**
 * What `aer1-verify-anchor` does with a document that has no proof: discovery when
 * `--online --relay` are given, else the original "no anchor proof" usage error with
 * the way to discovery added.
 */
export function discoveryFor(values: DiscoveryFlags, options: VerifyOptions, kinds: readonly number[]) {
  const relays = parseRelays(values.relay);
  return async (document: unknown, fetcher: RelayFetcher | null, noProof: UsageError): Promise<DiscoveryReport> => {
    if (!values.online || fetcher === null || relays.length === 0) {
      throw new UsageError(`${noProof.message} (or give --online --relay URL --expected-pubkey KEY to find its anchor on relays)`, noProof.code);
    }
    return discoverAnchors(document, {
      relays,
      trustedPubkeys: options.expectedPubkeys ?? [],
      kinds,
      fetcher,
      requireAnchored: values['require-anchored'] === true,
      ...(options.relayBound ? { bound: options.relayBound } : {}),
      verify: options,
    });
  };
}
