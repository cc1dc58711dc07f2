import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, logDir, logKeyFile, nostrQuorum, shardLogDir } from '../../src/adapters/config/config.js';
import { DEFAULT_LOG_KEY_FILE } from '../../src/cli/commands/keygen.js';
import { CONFIG_KEYS, configDefault, configSchema } from '../../src/adapters/config/schema.js';
import { DEFAULT_LIMITS } from '../../src/core/aer1/limits.js';
import { DEFAULT_EVENT_KIND } from '../../src/core/nostr/events.js';
import { DEFAULT_TIMEOUT_MS as CALENDAR_TIMEOUT_MS } from '../../src/adapters/ots/calendar/index.js';
import { DEFAULT_SOURCE_TIMEOUT_MS } from '../../src/adapters/bitcoin/sources.js';
import { tempDir } from '../helpers/harness.js';

function file(content: unknown): string {
  const f = join(tempDir('cfg'), 'c.json');
  writeFileSync(f, typeof content === 'string' ? content : JSON.stringify(content));
  return f;
}

describe('configuration', () => {
  it('runs on the built-in defaults alone: the public witnesses, loopback HTTP', () => {
    const c = loadConfig({ env: {} });
    expect(c.nostr.relays.every((u) => u.startsWith('wss://'))).toBe(true);
    expect(c.ots.calendars.every((u) => u.startsWith('https://'))).toBe(true);
    expect(c.http.host).toBe('127.0.0.1');
    // auto is the default
    expect(c.nostr.mode).toBe('auto');
  });

  it('layers: defaults, then --config FILE, then environment variables', () => {
    const f = file({ nostr: { mode: 'batch', relays: ['ws://127.0.0.1:7000', 'ws://127.0.0.1:7001'] }, queue: { concurrency: 4 } });
    const c = loadConfig({ file: f, env: { AER1_QUEUE_CONCURRENCY: '9', AER1_NOSTR_QUORUM: '1', REDIS_URL: 'redis://127.0.0.1:6390' } });
    expect(c.nostr.mode).toBe('batch');
    expect(c.queue.concurrency).toBe(9);
    expect(nostrQuorum(c)).toBe(1);
    expect(c.redis.url).toBe('redis://127.0.0.1:6390');
    expect(nostrQuorum(loadConfig({ file: f, env: {} }))).toBe(2);
  });

  it('names the bad key: unknown keys, wrong types, out-of-range values, bad URLs, bad environment values', () => {
    const cases: Array<[unknown, Record<string, string>, RegExp]> = [
      [{ nostr: { moed: 'batch' } }, {}, /config nostr\.moed: unknown key/],
      [{ queue: { concurrency: 'many' } }, {}, /config queue\.concurrency: expected an integer/],
      [{ queue: { concurrency: 0 } }, {}, /config queue\.concurrency: must be between 1 and 1000/],
      [{ ots: { calendars: ['ftp://x'] } }, {}, /config ots\.calendars\[0\]: URL must use http: or https:/],
      [{ nostr: { mode: 'both' } }, {}, /config nostr\.mode: must be one of auto, envelope, batch/],
      [{}, { AER1_HTTP_PORT: 'eighty' }, /config http\.port: AER1_HTTP_PORT must be an integer/],
      [{}, { AER1_NOSTR_ENABLED: 'maybe' }, /config nostr\.enabled: AER1_NOSTR_ENABLED must be true or false/],
      [{ ots: { minCalendars: 9 } }, {}, /config ots\.minCalendars: m = 9 exceeds the 4 configured calendars/],
      [{ webhooks: [{ url: 'http://127.0.0.1:1/h', secret: 'short' }] }, {}, /config webhooks\[0\]\.secret/],
      [{ webhooks: [{ url: 'http://u:p@127.0.0.1:1/h', secret: 'long-enough-secret-0' }] }, {}, /config webhooks\[0\]\.url: a webhook URL must not carry credentials/],
      [{ webhooks: [{ url: 'http://127.0.0.1:1/h', secret: 'long-enough-secret-0', headers: { 'X-Aer1-Event-Id': '1' } }] }, {}, /config webhooks\[0\]\.headers\.X-Aer1-Event-Id: the daemon sets this header itself/],
      [{ http: { allowedHosts: ['anchor.internal:8787'] } }, {}, /config http\.allowedHosts\[0\]: not a host name or address without a port/],
      [{ http: { allowedHosts: 'localhost' } }, {}, /config http\.allowedHosts: expected a list of host names/],
      [{ http: { maxLiveClients: 0 } }, {}, /config http\.maxLiveClients: must be between 1 and 100000/],
      [{}, { AER1_HTTP_MAX_REPLAY: 'all' }, /config http\.maxReplay: AER1_HTTP_MAX_REPLAY must be an integer/],
    ];
    for (const [content, env, message] of cases) {
      expect(() => loadConfig({ file: file(content), env })).toThrow(message);
    }
    expect(() => loadConfig({ file: file('{not json'), env: {} })).toThrow(/is not JSON/);
  });

  it('names the environment variable when the bad value came from it, and only then', () => {
    expect(() => loadConfig({ env: { AER1_HTTP_PORT: '99999' } })).toThrow(/^config http\.port: must be between 0 and 65535, got 99999 \(from AER1_HTTP_PORT\)$/);
    expect(() => loadConfig({ env: { AER1_NOSTR_RELAYS: 'wss://a.example,https://b.example' } })).toThrow(/^config nostr\.relays\[1\]: URL must use ws: or wss:: "https:\/\/b\.example\/" \(from AER1_NOSTR_RELAYS\)$/);
    expect(() => loadConfig({ file: file({ http: { port: 99999 } }), env: {} })).toThrow(/^config http\.port: must be between 0 and 65535, got 99999$/);
    expect(() => loadConfig({ env: { AER1_NOSTR_QUORUM: '5' } })).toThrow(/^config nostr\.quorum: quorum 5 exceeds the 3 configured relays \(from AER1_NOSTR_QUORUM\)$/);
    expect(() => loadConfig({ file: file({ nostr: { quorum: 5 } }), env: {} })).toThrow(/^config nostr\.quorum: quorum 5 exceeds the 3 configured relays$/);
    // the file's value is overridden by the environment: the environment's value is the one named
    expect(() => loadConfig({ file: file({ http: { port: 1 } }), env: { AER1_HTTP_PORT: '-1' } })).toThrow(/\(from AER1_HTTP_PORT\)$/);
  });

  it('redis.cluster: a list of redis URLs (comma-separated in AER1_REDIS_CLUSTER), never beside redis.url', () => {
    expect(loadConfig({ env: {} }).redis.cluster).toEqual([]);
    const c = loadConfig({ env: { AER1_REDIS_CLUSTER: 'redis://127.0.0.1:7000,redis://127.0.0.1:7001' } });
    expect(c.redis.cluster).toEqual(['redis://127.0.0.1:7000', 'redis://127.0.0.1:7001']);
    expect(c.redis.url).toBeNull();
    expect(() => loadConfig({ env: { AER1_REDIS_CLUSTER: 'redis://127.0.0.1:7000,http://127.0.0.1:7001' } })).toThrow(/^config redis\.cluster\[1\]: URL must use redis: or rediss:: "http:\/\/127\.0\.0\.1:7001\/" \(from AER1_REDIS_CLUSTER\)$/);
    const both = /^config redis\.cluster: redis\.url and redis\.cluster are both set: set redis\.url for one Redis or redis\.cluster for a Redis Cluster, not both/;
    expect(() => loadConfig({ env: { AER1_REDIS_CLUSTER: 'redis://127.0.0.1:7000', REDIS_URL: 'redis://127.0.0.1:6379' } })).toThrow(both);
    expect(() => loadConfig({ file: file({ redis: { url: 'redis://127.0.0.1:6379', cluster: ['redis://127.0.0.1:7000'] } }), env: {} })).toThrow(new RegExp(`${both.source}$`));
  });

  it('every error is one line, and a secret given in a bad value is never echoed', () => {
    const secret = 'hunter2-hunter2-hunter2';
    const cases: Array<[unknown, Record<string, string>]> = [
      [{}, { AER1_WEBHOOKS: JSON.stringify([{ url: `http://u:${secret}@127.0.0.1:1/`, secret: 'long-enough-secret-0' }]) }],
      [{ webhooks: [{ url: 'http://127.0.0.1:1/', secret: secret.slice(0, 10) }] }, {}],
      [{ webhooks: [{ url: 'http://127.0.0.1:1/', secret: 'long-enough-secret-0', headers: { Authorization: `${secret}\n` } }] }, {}],
      [{ http: { token: 7 } }, {}],
      [{ ots: { bitcoindUrl: `//rpc:${secret}@127.0.0.1:8332/` } }, {}],
      [{}, { AER1_OTS_BITCOIND_URL: `rpc ${secret}` }],
      [{ ots: { bitcoindUrl: `ftp://rpc:${secret}@127.0.0.1:8332/` } }, {}],
      [{ webhooks: [{ url: 'http://127.0.0.1:1/', secret: 'long-enough-secret-0', extra: secret }] }, {}],
    ];
    let refused = 0;
    for (const [content, env] of cases) {
      try {
        loadConfig({ file: file(content), env });
      } catch (err) {
        refused++;
        const message = (err as Error).message;
        expect(message).toMatch(/^config [^\n]+$/);
        expect(message).not.toContain(secret);
        expect(message).not.toContain(secret.slice(0, 10));
      }
    }
    expect(refused).toBe(cases.length);
  });

  it('the defaults are in one place: each passes its own schema, and code that runs without a config uses them', () => {
    for (const spec of CONFIG_KEYS) expect(spec.schema.safeParse(spec.default).success, spec.key).toBe(true);
    const defaults = loadConfig({ env: {} });
    expect(configSchema.parse(defaults)).toEqual(defaults);
    expect(configDefault('nostr.kind')).toBe(DEFAULT_EVENT_KIND);
    expect(configDefault('limits.maxSteps')).toBe(DEFAULT_LIMITS.maxSteps);
    expect(configDefault('limits.maxEntries')).toBe(DEFAULT_LIMITS.maxEntries);
    expect(CALENDAR_TIMEOUT_MS).toBe(configDefault('ots.timeoutMs'));
    expect(DEFAULT_SOURCE_TIMEOUT_MS).toBe(configDefault('ots.timeoutMs'));
  });

  it('reads http.allowedHosts as a list of names in one form: lowercase, IPv6 in brackets, no trailing dot', () => {
    expect(loadConfig({ env: {} }).http.allowedHosts).toEqual(['localhost', '127.0.0.1', '[::1]']);
    expect(loadConfig({ env: { AER1_HTTP_ALLOWED_HOSTS: 'Anchor.Internal., ::1, *' } }).http.allowedHosts).toEqual(['anchor.internal', '[::1]', '*']);
    expect(loadConfig({ env: {} }).http).toMatchObject({ maxLiveClients: 256, maxReplay: 1000 });
  });

  it('runs the anchor log by default, in a folder and key file named for redis.prefix as one file name each', () => {
    const c = loadConfig({ env: {} });
    expect(c.log.enabled).toBe(true);
    expect([logDir(c), logKeyFile(c)]).toEqual(['./var/log/aer1', './var/log-aer1.key']);
    expect(DEFAULT_LOG_KEY_FILE).toBe('./var/log-aer1.key');
    const named = (prefix: string): string => logDir(loadConfig({ env: { AER1_REDIS_PREFIX: prefix } }));
    // a separator, a leading dot, '%' and a non-ASCII letter become %XX: two prefixes never share a folder
    expect(['a/b', '..', '.hidden', 'x.y_z-1', '50%', 'é'].map(named)).toEqual(['./var/log/a%2Fb', './var/log/%2E.', './var/log/%2Ehidden', './var/log/x.y_z-1', './var/log/50%25', './var/log/%C3%A9']);
    const long = named('p'.repeat(300)).slice('./var/log/'.length);
    expect(long).toHaveLength(100);
    expect(long).toMatch(/^p{83}-[0-9a-f]{16}$/);
    expect(named('p'.repeat(301))).not.toBe(named('p'.repeat(300)));
    // set, they are used as given; with K shards each shard has a sub-folder
    const set = loadConfig({ env: { AER1_ANCHOR_LOG_DIR: '/srv/log', AER1_ANCHOR_LOG_KEY_FILE: '/srv/log.key', AER1_REDIS_SHARDS: '2' } });
    expect([logDir(set), logKeyFile(set), shardLogDir(set, 1)]).toEqual(['/srv/log', '/srv/log.key', '/srv/log/1']);
    expect(shardLogDir(c, 0)).toBe('./var/log/aer1');
  });
});
