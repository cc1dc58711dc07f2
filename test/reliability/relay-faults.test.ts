/**
 * Relay faults against real Redis and real dev relays: a relay that closes the connection
 * on every EVENT for a while, and one that never answers for a while. Either way every
 * subject ends confirmed on all relays, each event stored once per relay, and the record
 * shows the relay that failed and how many attempts it took.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import { Issuer, receiptFields, startDaemon, startRelays, testConfig, waitFor } from '../helpers/harness.js';
import { audit, report, statusCounts, tapRelay, type RelayTap } from './audit.js';

/**
 * A TCP proxy in front of a relay that, while `dropOnOk` is set, closes the connection as
 * soon as the relay answers OK: the relay has stored the event, the publisher never hears it.
 */
interface OkDropper {
  url: string;
  dropOnOk: boolean;
  drops: number;
  close(): Promise<void>;
}

async function okDropper(relay: DevRelay): Promise<OkDropper> {
  const sockets = new Set<Socket>();
  const state = { dropOnOk: true, drops: 0 };
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: relay.port });
    sockets.add(client);
    sockets.add(upstream);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      // server frames are unmasked and uncompressed (the dev relay does not deflate)
      if (state.dropOnOk && chunk.includes('["OK"')) {
        state.drops++;
        end();
        return;
      }
      client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}`,
    get dropOnOk() {
      return state.dropOnOk;
    },
    set dropOnOk(v: boolean) {
      state.dropOnOk = v;
    },
    get drops() {
      return state.drops;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function relayFault(
  name: string,
  n: number,
  switchOn: (relay: DevRelay) => void,
  switchOff: (relay: DevRelay) => void,
  faultStatus: 'error' | 'timeout',
  opts: { proxy?: boolean } = {},
): Promise<void> {
  const relays = await startRelays(3);
  const taps: RelayTap[] = relays.map(tapRelay);
  const proxy = opts.proxy ? await okDropper(relays[2]!) : null;
  const urls = relays.map((r, i) => (i === 2 && proxy ? proxy.url : r.url));
  const bad = { url: urls[2]!, relay: relays[2]! };
  const config = testConfig({
    relays,
    // quorum 3 (all): the subjects wait partial on the bad relay, then confirm when it recovers
    overrides: { nostr: { relays: urls, quorum: 3, maxAttempts: 1000, backoffMs: 100, backoffMaxMs: 800, publishTimeoutMs: 1000, concurrency: 64 } },
  });
  const daemon = await startDaemon(config);
  const issuer = new Issuer(config);
  try {
    switchOn(bad.relay);
    const subjects = Array.from({ length: n }, () => receiptFields());
    const keys = subjects.map((s) => s.receipt_uuid);
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    // The two healthy relays accept everything; the bad one keeps failing and is retried.
    await waitFor(`${n} partial`, async () => (await issuer.count('partial')) === n, 90_000, 200);
    const records = await issuer.store.subjects.getRecords(keys);
    const eventIds = records.map((r) => r!.nostrEventId!);
    // Every subject has been tried on the bad relay and failed at least once.
    const failures = await waitFor(`${n} failures reported by the bad relay`, async () => {
      const out = [];
      for (const id of eventIds) {
        const rep = (await issuer.store.events.relayReports(id)).find((r) => r.url === bad.url);
        if (!rep) return null;
        out.push(rep);
      }
      return out;
    }, 90_000, 250) ?? [];
    for (const f of failures) {
      expect(['error', 'timeout']).toContain(f.status);
      expect(f.final).toBe(false);
      expect(f.message.length).toBeGreaterThan(0);
    }
    // the fault's own signature shows among them (a timeout also closes the connection others wait on)
    expect(failures.some((f) => f.status === faultStatus)).toBe(true);
    // the event reached the relay only when the fault let it through
    if (proxy) expect(bad.relay.eventCount()).toBeGreaterThan(0);
    else expect(bad.relay.eventCount()).toBe(0);

    switchOff(bad.relay);
    if (proxy) proxy.dropOnOk = false;
    await waitFor(`${n} confirmed after the relay recovered`, async () => (await issuer.count('confirmed')) === n, 120_000, 250).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}; statuses ${JSON.stringify(await statusCounts(issuer, keys))}`);
    });

    let retried = 0;
    const result = await audit(name, issuer, keys, taps, {
      history: (_key, h) => {
        const nostr = h.filter((e) => e.witness === 'nostr' && e.from !== e.to).map((e) => e.to);
        expect(nostr).toEqual(['partial', 'confirmed']);
        // the last relay to accept is the one that failed
        expect(h.filter((e) => e.to === 'confirmed').at(-1)?.detail).toContain(`${bad.url}: accepted`);
      },
    });
    for (const key of keys) {
      const r = await issuer.store.subjects.getRecord(key);
      const rep = (await issuer.store.events.relayReports(r!.nostrEventId!)).find((x) => x.url === bad.url);
      expect(rep?.status).toBe('accepted');
      if ((rep?.attempts ?? 0) > 1) retried++;
    }
    // every subject reached the bad relay at least once while it failed
    expect(retried).toBe(n);
    if (proxy) {
      // stored before the OK was lost: the retry is answered duplicate, and that counts as accepted
      expect(result.resent).toBeGreaterThan(0);
      expect(proxy.drops).toBeGreaterThan(0);
    }
    report(result, { relays: relays.length, retried, ...(proxy ? { drops: proxy.drops } : {}) });
  } finally {
    await daemon.stop();
    await issuer.close();
    await proxy?.close();
    await Promise.all(relays.map((r) => r.close()));
  }
}

describe('relay faults', () => {
  it('a relay that closes the connection on every EVENT, then recovers: all confirmed, none stored twice', { timeout: 240_000 }, async () => {
    await relayFault(
      'relay-drops-connection',
      200,
      (r) => {
        r.faults.dropOnEvent = true;
      },
      (r) => {
        r.faults.dropOnEvent = false;
      },
      'error',
    );
  });

  it('a relay that never answers, then recovers: publishes time out and are retried; all confirmed, none stored twice', { timeout: 240_000 }, async () => {
    await relayFault(
      'relay-silent',
      150,
      (r) => {
        r.faults.silent = true;
      },
      (r) => {
        r.faults.silent = false;
      },
      'timeout',
    );
  });

  it('a relay whose connection closes after it stored the event, before its OK arrives: retried, answered duplicate, stored once', { timeout: 240_000 }, async () => {
    await relayFault('relay-drops-before-ok', 200, () => undefined, () => undefined, 'error', { proxy: true });
  });
});
