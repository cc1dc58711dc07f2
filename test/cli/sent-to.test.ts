/**
 * One rule for where a subject's witness was sent (`sentTo`, src/adapters/state/subject-view.ts):
 * the API's subject view, `aer1-anchor status --json` and the proof (API and `aer1-anchor
 * proof`) name the same relays and calendars, with the same statuses, in the same order, for
 * a subject before its event, in batch mode, in envelope mode, and after a relay and a
 * calendar are removed from the config it was sent with.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/adapters/config/config.js';
import { startHttpServer, type HttpServer } from '../../src/adapters/http/server.js';
import type { Daemon } from '../../src/daemon/daemon.js';
import { createLogger } from '../../src/daemon/logger.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { checkedFetch } from '../helpers/openapi.js';
import { Issuer, REPO_ROOT, SHARED_REDIS_URL, receiptFields, runAnchorCli, startCalendars, startDaemon, startRelays, tempDir, testConfig, uniquePrefix, waitFor } from '../helpers/harness.js';

const CLI = join(REPO_ROOT, 'dist/src/cli/aer1-anchor.js');
type Pair = [string, string];
interface Sent {
  relays: Pair[];
  calendars: Pair[];
}

describe('where a subject was sent: the API, the CLI status and the proof agree', () => {
  let relays: DevRelay[] = [];
  let calendars: DevCalendar[] = [];
  let headersFile = '';
  let dir = '';
  const prefix = uniquePrefix('sent-to');
  let running: { daemon: Daemon; http: HttpServer; config: Config; file: string } | null = null;
  let issuer: Issuer;

  async function start(mode: 'batch' | 'envelope', windowMs: number, use: { relays: DevRelay[]; calendars: DevCalendar[] }): Promise<void> {
    await stop();
    const config = testConfig({ relays: use.relays, calendars: use.calendars, headersFile, prefix, overrides: { http: { enabled: true, host: '127.0.0.1', port: 0 }, nostr: { mode, batchWindowMs: windowMs, nip03: false }, ots: { batchWindowMs: windowMs, minCalendars: use.calendars.length } } });
    const daemon = await startDaemon(config);
    const http = await startHttpServer({ daemon, log: createLogger('silent') });
    const file = join(dir, `config-${mode}-${windowMs}-${use.relays.length}.json`);
    writeFileSync(file, JSON.stringify({ redis: { prefix, url: SHARED_REDIS_URL }, nostr: { relays: config.nostr.relays, mode }, ots: { calendars: config.ots.calendars, minCalendars: use.calendars.length } }));
    running = { daemon, http, config, file };
  }

  async function stop(): Promise<void> {
    if (!running) return;
    await running.http.close();
    await running.daemon.stop();
    running = null;
  }

  // run apart, not with spawnSync: the daemon's HTTP server lives in this process, and a loop held
  // for seconds let its keep-alive timer close the connection fetch was about to reuse (ECONNRESET)
  async function cli(args: string[]): Promise<unknown> {
    const r = await runAnchorCli([...args, '--config', running!.file], { env: { PATH: process.env.PATH ?? '' } });
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout);
  }

  const pairs = (list: Array<{ url: string; status: string }> | undefined): Pair[] => (list ?? []).map((x) => [x.url, x.status]);

  /** What each of the four answers says; asserts they agree and returns it. */
  async function agree(key: string): Promise<Sent> {
    type View = { witnesses: { nostr?: { relays: Array<{ url: string; status: string }> }; ots?: { calendars: Array<{ url: string; status: string }> } } };
    type Proof = { nostr?: { relays: Array<{ url: string; status: string }> }; ots?: { calendars: Array<{ url: string; status: string }> } };
    const apiView = (await (await checkedFetch(`${running!.http.url}/v1/anchors/${key}`)).json()) as View;
    const apiProof = (await (await checkedFetch(`${running!.http.url}/v1/anchors/${key}/proof`)).json()) as Proof;
    const cliView = (await cli(['status', key, '--json'])) as View;
    const cliProof = (await cli(['proof', key])) as Proof;
    const fromView = (v: View): Sent => ({ relays: pairs(v.witnesses.nostr?.relays), calendars: pairs(v.witnesses.ots?.calendars) });
    const fromProof = (p: Proof): Sent => ({ relays: pairs(p.nostr?.relays), calendars: pairs(p.ots?.calendars) });
    const api = fromView(apiView);
    expect(fromView(cliView), 'aer1-anchor status').toEqual(api);
    expect(fromProof(apiProof), 'GET …/proof').toEqual(api);
    expect(fromProof(cliProof), 'aer1-anchor proof').toEqual(api);
    return api;
  }

  beforeAll(async () => {
    dir = tempDir('sent-to');
    headersFile = join(dir, 'headers.json');
    relays = await startRelays(2);
    calendars = await startCalendars(2, headersFile);
    issuer = new Issuer(testConfig({ relays, calendars, headersFile, prefix }));
  });

  afterAll(async () => {
    await stop();
    await issuer?.close();
    await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
  });

  const batched = receiptFields();
  const enveloped = receiptFields();
  const urls = (list: Array<{ url: string }>, status: string): Pair[] => list.map((x) => [x.url, status]);

  it('needs the built CLI (npm test builds it)', () => {
    expect(existsSync(CLI), `${CLI} is missing: run npm run build`).toBe(true);
  });

  it('before its event and its batch: the configured relays pending, the configured calendars unsubmitted', { timeout: 60_000 }, async () => {
    await start('batch', 600_000, { relays, calendars });
    await issuer.enqueue(batched, batched.receipt_uuid);
    await waitFor('accepted', () => issuer.store.subjects.getRecord(batched.receipt_uuid), 30_000);
    expect(await agree(batched.receipt_uuid)).toEqual({ relays: urls(relays, 'pending'), calendars: urls(calendars, 'unsubmitted') });
  });

  it('batch mode: the relays its batch event was handed to and the calendars its batch was submitted to', { timeout: 60_000 }, async () => {
    await start('batch', 200, { relays, calendars });
    await waitFor('the batch event accepted and the batch submitted', async () => {
      const r = await issuer.store.subjects.getRecord(batched.receipt_uuid);
      return r?.witnesses.nostr?.status === 'confirmed' && r.batches.ots && (await issuer.store.batches.batchField('ots', r.batches.ots.id, 'submitted')) === '1';
    }, 30_000);
    expect(await agree(batched.receipt_uuid)).toEqual({ relays: urls(relays, 'accepted'), calendars: urls(calendars, 'pending') });
  });

  it('envelope mode: the relays its own event was handed to', { timeout: 60_000 }, async () => {
    await start('envelope', 200, { relays, calendars });
    await issuer.enqueue(enveloped, enveloped.receipt_uuid);
    await waitFor('its event accepted and its batch submitted', async () => {
      const r = await issuer.store.subjects.getRecord(enveloped.receipt_uuid);
      return r?.nostrEventId && r.witnesses.nostr?.status === 'confirmed' && r.batches.ots && (await issuer.store.batches.batchField('ots', r.batches.ots.id, 'submitted')) === '1';
    }, 30_000);
    expect(await agree(enveloped.receipt_uuid)).toEqual({ relays: urls(relays, 'accepted'), calendars: urls(calendars, 'pending') });
  });

  it('a relay and a calendar removed from the config after sending: still listed, after those the config names', { timeout: 60_000 }, async () => {
    await start('envelope', 200, { relays: [relays[1]!], calendars: [calendars[1]!] });
    const expected = { relays: urls([relays[1]!, relays[0]!], 'accepted'), calendars: urls([calendars[1]!, calendars[0]!], 'pending') };
    expect(await agree(batched.receipt_uuid)).toEqual(expected);
    expect(await agree(enveloped.receipt_uuid)).toEqual(expected);
  });
});
