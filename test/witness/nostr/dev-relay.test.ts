import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { startDevRelay, type DevRelay } from '../../../src/dev/relay/dev-relay.js';
import { serializeEvent } from '../../../src/core/nostr/events.js';
import { eventFor, workflowEnvelope } from './fixtures.js';

const tmp = mkdtempSync(join(tmpdir(), 'aer1-devrelay-'));

/** A bare WebSocket client: sends frames, collects the relay's frames as text. */
async function rawClient(url: string) {
  const ws = new WebSocket(url);
  const frames: string[] = [];
  const waiters: Array<() => void> = [];
  ws.on('message', (data) => {
    frames.push(data.toString());
    for (const w of waiters.splice(0)) w();
  });
  ws.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    frames,
    send: (frame: unknown) => ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame)),
    /** The next frame matching `pred`, waiting at most 5 s. */
    async next(pred: (f: unknown[]) => boolean): Promise<unknown[]> {
      const deadline = Date.now() + 5000;
      for (let seen = 0; Date.now() < deadline; ) {
        for (; seen < frames.length; seen++) {
          const f = JSON.parse(frames[seen]!) as unknown[];
          if (pred(f)) {
            frames.splice(seen, 1);
            return f;
          }
        }
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.max(1, deadline - Date.now()));
          waiters.push(() => {
            clearTimeout(t);
            resolve();
          });
        });
      }
      throw new Error(`no matching frame within 5 s; got ${JSON.stringify(frames)}`);
    },
    close: () => ws.terminate(),
  };
}

describe('dev relay', () => {
  let relay: DevRelay;
  beforeAll(async () => {
    relay = await startDevRelay();
  });
  afterAll(async () => {
    await relay.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('listens on a free loopback port and stores a valid event', async () => {
    expect(relay.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    expect(relay.port).toBeGreaterThan(0);
    const c = await rawClient(relay.url);
    const ev = eventFor(1);
    c.send(['EVENT', ev]);
    expect(await c.next((f) => f[0] === 'OK')).toEqual(['OK', ev.id, true, '']);
    c.send(['EVENT', ev]);
    expect(await c.next((f) => f[0] === 'OK')).toEqual(['OK', ev.id, true, 'duplicate: the event already exists']);
    expect(relay.eventCount()).toBe(1);
    expect(relay.events()).toEqual([ev]);
    c.close();
  });

  it('answers a tampered event with OK false invalid, even when its id was stored before', async () => {
    const c = await rawClient(relay.url);
    const ev = eventFor(1); // stored by the previous test
    c.send(['EVENT', { ...ev, content: ev.content.replace('wf-1', 'wf-X') }]);
    expect(await c.next((f) => f[0] === 'OK')).toEqual(['OK', ev.id, false, 'invalid: id is wrong']);
    const fresh = eventFor(2);
    c.send(['EVENT', { ...fresh, sig: 'a'.repeat(128) }]);
    expect(await c.next((f) => f[0] === 'OK')).toEqual(['OK', fresh.id, false, 'invalid: signature is wrong']);
    c.send(['EVENT', { ...fresh, id: 'nothex' }]);
    const shape = await c.next((f) => f[0] === 'OK');
    expect(shape.slice(0, 3)).toEqual(['OK', 'nothex', false]);
    expect(shape[3]).toMatch(/^invalid: /);
    expect(c.frames.filter((f) => f.startsWith('["NOTICE"'))).toEqual([]);
    expect(relay.eventCount()).toBe(1);
    c.close();
  });

  it('serves an event back by id with the REQ/EOSE flow, NIP-01 field order', async () => {
    const c = await rawClient(relay.url);
    const ev = eventFor(1);
    c.send(['REQ', 's1', { ids: [ev.id] }]);
    const got = await c.next((f) => f[0] === 'EVENT');
    expect(got).toEqual(['EVENT', 's1', ev]);
    await c.next((f) => f[0] === 'EOSE' && f[1] === 's1');
    // the raw frame carries the event exactly as serializeEvent writes it
    c.send(['REQ', 's2', { '#x': [workflowEnvelope(1).digestHex] }]);
    await c.next((f) => f[0] === 'EOSE' && f[1] === 's2');
    expect(c.frames).toContain(`["EVENT","s2",${serializeEvent(ev)}]`);
    c.close();
  });

  it('refuses chosen events through beforeEvent, with the given prefix', async () => {
    const c = await rawClient(relay.url);
    const ev = eventFor(3);
    relay.beforeEvent = (e) => (e.id === ev.id ? { accept: false, message: 'rate-limited: slow down' } : undefined);
    try {
      c.send(['EVENT', ev]);
      expect(await c.next((f) => f[0] === 'OK')).toEqual(['OK', ev.id, false, 'rate-limited: slow down']);
      const other = eventFor(4);
      c.send(['EVENT', other]);
      expect(await c.next((f) => f[0] === 'OK')).toEqual(['OK', other.id, true, '']);
    } finally {
      relay.beforeEvent = undefined;
      c.close();
    }
  });

  it('stays silent or drops the connection when told to', async () => {
    const c = await rawClient(relay.url);
    relay.faults.silent = true;
    const ev = eventFor(5);
    c.send(['EVENT', ev]);
    // a REQ after the EVENT is answered, so the EVENT was read and ignored
    c.send(['REQ', 'probe', { ids: [ev.id] }]);
    await c.next((f) => f[0] === 'EOSE' && f[1] === 'probe');
    expect(c.frames.some((f) => f.startsWith('["OK"'))).toBe(false);
    relay.faults.silent = false;
    relay.faults.dropOnEvent = true;
    const closed = new Promise<number>((resolve) => {
      const ws = new WebSocket(relay.url);
      ws.on('error', () => undefined);
      ws.on('open', () => ws.send(JSON.stringify(['EVENT', ev])));
      ws.on('close', (code) => resolve(code));
    });
    expect(await closed).toBe(1006);
    relay.faults.dropOnEvent = false;
    expect(relay.eventCount()).toBe(2);
    c.close();
  });

  it('stops refusing connections and restarts on the same port with the same events', async () => {
    const port = relay.port;
    const count = relay.eventCount();
    await relay.stop();
    expect(relay.listening).toBe(false);
    await expect(rawClient(relay.url)).rejects.toThrow(/ECONNREFUSED/);
    await relay.restart();
    expect(relay.port).toBe(port);
    const c = await rawClient(relay.url);
    const ev = eventFor(1);
    c.send(['EVENT', ev]);
    expect(await c.next((f) => f[0] === 'OK')).toEqual(['OK', ev.id, true, 'duplicate: the event already exists']);
    expect(relay.eventCount()).toBe(count);
    c.close();
  });

  it('keeps events in a file across a full close and a new relay', async () => {
    const eventsFile = join(tmp, 'relay.jsonl');
    const first = await startDevRelay({ eventsFile });
    const ev = eventFor(9);
    const c = await rawClient(first.url);
    c.send(['EVENT', ev]);
    expect(await c.next((f) => f[0] === 'OK')).toEqual(['OK', ev.id, true, '']);
    c.close();
    await first.close();
    const second = await startDevRelay({ eventsFile });
    try {
      expect(second.events()).toEqual([ev]);
    } finally {
      await second.close();
    }
  });
});
