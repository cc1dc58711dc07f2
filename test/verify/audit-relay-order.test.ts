/**
 * `aer1-anchor audit` lists what it read from each relay in the order the relays were
 * given, whatever order their answers arrive in: two real dev relays on loopback hold the
 * same events, and the relay given first answers every query only after the one given
 * second has answered. The listing (a withheld subject "on A, B") and the look-ups of the
 * folder's keys (an anchor older than --since, and an event of the signer that is no
 * anchor, ignored on both relays) keep the given order.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/aer1/canonical-json.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { audit, type AuditReport } from '../../src/core/verify/audit.js';
import type { RelayFetcher } from '../../src/core/verify/online.js';
import type { RelayQueryFilter } from '../../src/core/nostr/filter.js';
import { RelayClientFetcher } from '../../src/adapters/nostr/relay-fetcher.js';
import { startDevRelay, type DevRelay } from '../../src/dev/relay/dev-relay.js';
import { envelopeEvent, subjectTagValue, type SignedEvent } from '../../src/core/nostr/events.js';
import { RelayClient } from '../../src/adapters/nostr/relay-client.js';
import { KEY } from './build-proofs.js';

/** How long the relay given first waits for the other's answer before giving up (a bound, not a pace). */
const GATE_MS = 10_000;

function anchorOf(uuid: string, anchoredAt: string): SignedEvent {
  const canonical = canonicalJson({ type: 'zambo-receipt-anchor/1', subject: 'receipt', receipt_uuid: uuid, output_sha256: sha256Hex(uuid), anchored_at: anchoredAt });
  return envelopeEvent({ canonical, digestHex: sha256Hex(canonical) }, KEY);
}

/**
 * The real fetcher, but `late` answers each query only once `early` has answered the same
 * filter (each relay is asked the same pages: they hold the same events). Records the order
 * the answers arrived in, per filter.
 */
class LateFirst implements RelayFetcher {
  readonly arrived = new Map<string, string[]>();
  private readonly gates = new Map<string, { opened: Promise<void>; open: () => void }>();
  constructor(private readonly inner: RelayFetcher, private readonly late: string, private readonly early: string) {}

  private gate(key: string): { opened: Promise<void>; open: () => void } {
    let g = this.gates.get(key);
    if (!g) {
      let open!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      g = { opened, open };
      this.gates.set(key, g);
    }
    return g;
  }

  async query(url: string, filter: RelayQueryFilter): Promise<string[]> {
    const key = JSON.stringify(filter);
    const g = this.gate(key);
    if (url === this.late) {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${this.early} did not answer ${key} within ${GATE_MS} ms`)), GATE_MS)));
      try {
        await Promise.race([g.opened, bound]);
      } finally {
        clearTimeout(timer);
      }
    }
    const texts = await this.inner.query(url, filter);
    this.arrived.set(key, [...(this.arrived.get(key) ?? []), url]);
    if (url === this.early) g.open();
    return texts;
  }

  fetch(url: string, id: string): Promise<string | null> {
    return this.inner.fetch(url, id);
  }

  close(): void {}
}

describe('audit: relays listed in the order given, not the order they answered', () => {
  let a: DevRelay;
  let b: DevRelay;
  const inner = new RelayClientFetcher(5000);
  // older than --since: found only by looking up the folder's key
  const looked = anchorOf('order-looked-up', '2026-01-01T00:00:00Z');
  // the signer's event with that key's tag that is no anchor: ignored, on each relay
  const notAnchor = KEY.sign({ kind: 3099, created_at: looked.created_at, tags: [['i', subjectTagValue('order-looked-up')]], content: 'not an envelope' });
  // from --since on, and no document of it in the folder: withheld, found by the listing
  const withheld = anchorOf('order-withheld', '2026-01-02T00:00:00Z');
  const doc = { file: 'order-looked-up.json', value: { id: 'order-looked-up', canonical_bytes: '', output_hash: `sha256:${sha256Hex('')}` } };

  beforeAll(async () => {
    [a, b] = await Promise.all([startDevRelay(), startDevRelay()]);
    for (const relay of [a, b]) {
      const c = new RelayClient(relay.url, { ping: false });
      try {
        for (const ev of [looked, notAnchor, withheld]) expect((await c.publish(ev, { timeoutMs: 5000 })).status).toBe('accepted');
      } finally {
        c.close();
      }
    }
  });

  afterAll(async () => {
    inner.close();
    await Promise.all([a?.close(), b?.close()]);
  });

  async function auditGiven(relays: [string, string]): Promise<{ report: AuditReport; arrived: string[][] }> {
    const fetcher = new LateFirst(inner, relays[0], relays[1]);
    const report = await audit([doc], { relays, trustedPubkeys: [KEY.publicKey], kinds: [3099], since: withheld.created_at, fetcher });
    return { report, arrived: [...fetcher.arrived.values()] };
  }

  for (const order of ['a, b', 'b, a'] as const) {
    it(`given ${order}: each answer arrives from the other relay first, and every list is in the given order`, { timeout: 30_000 }, async () => {
      const relays: [string, string] = order === 'a, b' ? [a.url, b.url] : [b.url, a.url];
      const { report, arrived } = await auditGiven(relays);
      // the listing and the look-up each answered second relay first
      expect(arrived.length).toBeGreaterThanOrEqual(2);
      for (const urls of arrived) expect(urls).toEqual([relays[1], relays[0]]);
      expect(report.complete).toBe(true);
      expect(report.relays.map((r) => r.url)).toEqual(relays);
      expect(report.lookups.map((r) => r.url)).toEqual(relays);
      // listing: the withheld subject's anchor is on both, named in the given order
      expect(report.rows.find((r) => r.key === 'order-withheld')).toMatchObject({ outcome: 'withheld', detail: expect.stringContaining(`by event ${withheld.id} on ${relays[0]}, ${relays[1]};`) });
      // look-up: the anchor before --since is found by key, and the event that is no anchor is ignored on each relay, in the given order
      expect(report.rows.find((r) => r.key === 'order-looked-up')).toMatchObject({ anchors: [looked.id] });
      expect(report.ignored.filter((i) => i.event_id === notAnchor.id).map((i) => i.relay)).toEqual(relays);
      expect(report.ignored.find((i) => i.event_id === notAnchor.id)?.reason).toBe('its content is not JSON');
    });
  }
});
