/**
 * Every configuration key the daemon reads, as one table: key, environment variable,
 * default, meaning, and its zod schema. Everything else is derived from it: the `Config`
 * type (the schemas' output types), the validation of files, the environment and
 * overrides (config.ts), the defaults (here, nowhere else), and the reference in docs/configuration.md
 * table (scripts/config-reference.mjs).
 *
 * Adding a key: one row in CONFIG_KEYS with a schema built by the helpers below, then
 * `node scripts/config-reference.mjs --write`. A row of the former table ports by its
 * `type`: { kind: 'string' } → string(), 'optional-string' → optionalString(),
 * int(min, max) → int(min, max), 'bool' → bool(), { kind: 'enum', values } → oneOf(values),
 * 'url-list' → urlList(protocols), 'optional-url' → optionalUrl(protocols), 'host-list' →
 * hostList(), 'webhooks' → webhooks(). The helper also says how the environment variable
 * is read (settingMeta) and gives docs/configuration.md its constraint text.
 */
import { z } from 'zod';
import { DEFAULT_LIMITS } from '../../core/aer1/limits.js';
import { DEFAULT_EVENT_KIND } from '../../core/nostr/events.js';
import { displayUrl } from './display-url.js';
import { normalHostName } from './host-names.js';
import { parseWitnessKey } from '../../core/witness/cosignature.js';

/** How an environment variable's text becomes the value its schema checks. */
export type EnvForm = 'text' | 'optional-text' | 'int' | 'bool' | 'list' | 'json';

export interface SettingMeta {
  /** How the value is read from its environment variable. */
  env: EnvForm;
  /** The constraint in words, for docs/configuration.md ('' when the meaning says it all). */
  constraint: string;
}

/** The schema helpers register what the loader and the reference need to know about each schema. */
export const settingMeta = z.registry<SettingMeta>();

function setting<S extends z.ZodType>(schema: S, meta: SettingMeta): S {
  settingMeta.add(schema, meta);
  return schema;
}

const got = (v: unknown): string => (v === undefined ? 'nothing' : JSON.stringify(v));
const kindOf = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v);
const protocolWords = (protocols: readonly string[]): string => protocols.map((p) => p.replace(':', '')).join('/');

export function string() {
  const msg = (iss: { input?: unknown }) => `expected a non-empty string, got ${got(iss.input)}`;
  return setting(z.string({ error: msg }).min(1, { error: msg }), { env: 'text', constraint: '' });
}

export function optionalString() {
  const msg = 'expected a non-empty string or null';
  return setting(z.string({ error: msg }).min(1, { error: msg }).nullable(), { env: 'optional-text', constraint: 'Text, or null.' });
}

export function int(min: number, max: number) {
  const notInt = (iss: { input?: unknown }) => `expected an integer, got ${got(iss.input)}`;
  const range = (iss: { input?: unknown }) => `must be between ${min} and ${max}, got ${String(iss.input)}`;
  const schema = z.number({ error: notInt }).int({ error: notInt }).min(min, { error: range }).max(max, { error: range });
  return setting(schema, { env: 'int', constraint: `Integer ${min}–${max}.` });
}

export function bool() {
  return setting(z.boolean({ error: (iss) => `expected true or false, got ${got(iss.input)}` }), { env: 'bool', constraint: 'true/false (environment: 1/0, true/false, yes/no, on/off).' });
}

export function oneOf<const V extends readonly [string, ...string[]]>(values: V) {
  const schema = z.enum(values, { error: (iss) => `must be one of ${values.join(', ')}, got ${got(iss.input)}` });
  return setting(schema, { env: 'text', constraint: `One of ${values.map((v) => `\`${v}\``).join(', ')}.` });
}

/** A URL with one of `protocols`. Errors show it as scheme, host and path: its credentials or query may be secret. */
function url(protocols: readonly string[]) {
  return z.string({ error: (iss) => `expected a URL string, got ${kindOf(iss.input)}` }).superRefine((value, ctx) => {
    let u: URL;
    try {
      u = new URL(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'not a URL (the text is not shown: it may hold a credential)' });
      return;
    }
    if (!protocols.includes(u.protocol)) ctx.addIssue({ code: 'custom', message: `URL must use ${protocols.join(' or ')}: ${JSON.stringify(displayUrl(value))}` });
  });
}

export function urlList(protocols: readonly string[]) {
  const schema = z.array(url(protocols), { error: 'expected a list of URLs' }).superRefine((urls, ctx) => {
    if (new Set(urls).size !== urls.length) ctx.addIssue({ code: 'custom', message: 'lists a URL twice' });
  });
  return setting(schema, { env: 'list', constraint: `List of ${protocolWords(protocols)} URLs.` });
}

export function optionalUrl(protocols: readonly string[]) {
  return setting(url(protocols).nullable(), { env: 'optional-text', constraint: `${protocolWords(protocols)} URL, or null.` });
}

/** Host names in their normal form (host-names.ts); "*" answers any. */
export function hostList() {
  const name = z.string({ error: 'expected a host name' }).transform((v, ctx) => {
    if (v === '*') return '*';
    const n = normalHostName(v);
    if (n === null) {
      ctx.addIssue({ code: 'custom', message: `not a host name or address without a port (every port is answered): ${JSON.stringify(v.slice(0, 80))}` });
      return z.NEVER;
    }
    return n;
  });
  return setting(z.array(name, { error: 'expected a list of host names' }), { env: 'list', constraint: '' });
}

const WEBHOOK_KEYS = '{"url", "secret", "headers"?}';
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;
const HEADER_VALUE = /^[\t\x20-\x7e]{1,4096}$/;
/** Headers the daemon sets itself on every delivery. */
const OWN_HEADERS = new Set(['content-type', 'content-length', 'transfer-encoding', 'connection', 'host', 'user-agent']);
const MAX_WEBHOOK_HEADERS = 16;

/** Extra request headers of a hook (a receiver's own credential, for one). Values are never echoed: they are credentials. */
const webhookHeaders = z
  .record(z.string(), z.unknown(), { error: 'expected an object of header names to text values' })
  .transform((value, ctx) => {
    const entries = Object.entries(value);
    if (entries.length > MAX_WEBHOOK_HEADERS) {
      ctx.addIssue({ code: 'custom', message: `at most ${MAX_WEBHOOK_HEADERS} headers` });
      return z.NEVER;
    }
    const out: Record<string, string> = {};
    const seen = new Set<string>();
    for (const [name, v] of entries) {
      const issue = (message: string): never => {
        ctx.addIssue({ code: 'custom', message, path: [HEADER_NAME.test(name) ? name : name.slice(0, 64)] });
        return z.NEVER as never;
      };
      if (!HEADER_NAME.test(name)) return issue('not an HTTP header name');
      const lower = name.toLowerCase();
      if (OWN_HEADERS.has(lower) || lower.startsWith('x-aer1-')) return issue('the daemon sets this header itself');
      if (seen.has(lower)) return issue('header given twice (names are case-insensitive)');
      seen.add(lower);
      if (typeof v !== 'string' || !HEADER_VALUE.test(v)) return issue('expected 1 to 4096 printable ASCII characters (the value is not shown)');
      out[name] = v;
    }
    return out;
  });

const webhookUrl = url(['http:', 'https:']).superRefine((value, ctx) => {
  const u = new URL(value);
  if (u.username !== '' || u.password !== '') {
    ctx.addIssue({
      code: 'custom',
      message: `a webhook URL must not carry credentials (user:password@ in ${JSON.stringify(displayUrl(value))}): fetch refuses such URLs and the URL is shown in logs and reports. Put the receiver's credential in the hook's "headers" (e.g. {"Authorization": "Basic …"}); "secret" signs every body`,
    });
  }
});

const webhook = z.strictObject(
  {
    url: webhookUrl,
    secret: z.string({ error: 'expected a secret of at least 16 characters' }).min(16, { error: 'expected a secret of at least 16 characters' }),
    headers: webhookHeaders.optional(),
  },
  { error: (iss) => (iss.code === 'unrecognized_keys' ? 'unknown key' : `expected ${WEBHOOK_KEYS}`) },
);

export type WebhookConfig = z.output<typeof webhook>;

export function webhooks() {
  return setting(z.array(webhook, { error: `expected a list of ${WEBHOOK_KEYS}` }), { env: 'json', constraint: '' });
}

const LOG_WITNESS_KEYS = '{"url", "key"}';

/** A C2SP witness of the anchor log: its add-checkpoint prefix and its cosignature/v1 verifier key (`<name>+<hash>+<base64(0x04 ‖ key)>`). */
const logWitness = z.strictObject(
  {
    url: url(['http:', 'https:']),
    key: z.string({ error: 'expected a witness verifier key <name>+<hash>+<base64(0x04 ‖ key)>' }).superRefine((value, ctx) => {
      try {
        parseWitnessKey(value, 'key');
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    }),
  },
  { error: (iss) => (iss.code === 'unrecognized_keys' ? 'unknown key' : `expected ${LOG_WITNESS_KEYS}`) },
);

export type LogWitnessConfig = z.output<typeof logWitness>;

export function logWitnesses() {
  const schema = z.array(logWitness, { error: `expected a list of ${LOG_WITNESS_KEYS}` }).superRefine((list, ctx) => {
    if (new Set(list.map((w) => w.url)).size !== list.length) ctx.addIssue({ code: 'custom', message: 'lists a witness URL twice' });
  });
  return setting(schema, { env: 'json', constraint: '' });
}

export interface KeySpec {
  /** Dotted path in the config file: `section.name`, or a top-level name. */
  key: string;
  /** Built with the helpers above, so the loader knows how to read it from the environment. */
  schema: z.ZodType;
  /** The built-in default; validated by `schema` like any other value. */
  default: unknown;
  env: string;
  doc: string;
}

const MS_DAY = 86_400_000;

export const CONFIG_KEYS = [
  { key: 'redis.url', schema: optionalUrl(['redis:', 'rediss:']), default: null, env: 'REDIS_URL', doc: 'Redis to use. Unset: 127.0.0.1:6379 when it answers, else the embedded redis-server.' },
  { key: 'redis.cluster', schema: urlList(['redis:', 'rediss:']), default: [], env: 'AER1_REDIS_CLUSTER', doc: 'Redis Cluster startup nodes (comma-separated in the environment): the daemon and the CLI connect with a cluster client, which finds the other nodes and follows MOVED. Not with redis.url.' },
  { key: 'redis.prefix', schema: string(), default: 'aer1', env: 'AER1_REDIS_PREFIX', doc: 'Key prefix; wrapped in a hash tag ({aer1}) so every key lands in one Redis Cluster slot.' },
  { key: 'redis.shards', schema: int(1, 64), default: 1, env: 'AER1_REDIS_SHARDS', doc: 'Shards K: subjects spread over K hash tags ({aer1:0} … {aer1:K-1}) by shardOf(key) = first 4 bytes of SHA-256(key), big-endian, mod K; each shard its own state, queues, batches and witnesses, so a Redis Cluster spreads them over its masters. 1: one hash tag ({aer1}). Every daemon and client of one state must use the same K.' },
  { key: 'redis.localDefault', schema: bool(), default: true, env: 'AER1_REDIS_LOCAL_DEFAULT', doc: 'With no Redis configured, use 127.0.0.1:6379 when it answers; off: go straight to the embedded redis-server.' },
  { key: 'redis.embedded', schema: bool(), default: true, env: 'AER1_REDIS_EMBEDDED', doc: 'Start and supervise a private redis-server when no Redis is configured or answering.' },
  { key: 'redis.embeddedDir', schema: string(), default: './var/redis', env: 'AER1_REDIS_EMBEDDED_DIR', doc: 'Data folder of the embedded redis-server (append-only file on, noeviction).' },

  { key: 'queue.name', schema: string(), default: 'aer1-anchor', env: 'AER1_QUEUE_NAME', doc: 'BullMQ queue that issuers enqueue anchoring jobs on (job name "anchor").' },
  { key: 'queue.concurrency', schema: int(1, 1000), default: 32, env: 'AER1_QUEUE_CONCURRENCY', doc: 'Intake jobs processed at once by one daemon.' },
  { key: 'queue.maxSubjectsInFlight', schema: int(1, 1_000_000), default: 4000, env: 'AER1_QUEUE_MAX_SUBJECTS_IN_FLIGHT', doc: 'Most subjects of the intake jobs one daemon works on at once (per intake worker): a bulk job counts as its subjects, a single-subject job as one, so with bulk jobs of 1,000 four are taken in at a time, whatever queue.concurrency; a job that does not fit waits its turn, one bigger than this runs alone. Bounds the memory a burst of bulk jobs takes (docs/performance.md).' },
  { key: 'queue.stalledIntervalMs', schema: int(1000, 600_000), default: 30_000, env: 'AER1_QUEUE_STALLED_INTERVAL_MS', doc: 'How often a crashed daemon\'s in-flight jobs are looked for and handed back.' },
  { key: 'queue.maxSubjectsPerJob', schema: int(1, 10_000), default: 1000, env: 'AER1_QUEUE_MAX_SUBJECTS_PER_JOB', doc: 'Most subjects one bulk job (`{"subjects": [...]}`) may carry; a bigger one is refused whole. Producers split longer lists into jobs of this size.' },

  { key: 'reconcile.intervalMs', schema: int(100, MS_DAY), default: 60_000, env: 'AER1_RECONCILE_INTERVAL_MS', doc: 'How often the reconciler re-creates jobs that died (one daemon at a time); subjects younger than this are left to intake.' },
  { key: 'reconcile.limit', schema: int(1, 1_000_000), default: 10_000, env: 'AER1_RECONCILE_LIMIT', doc: 'Subjects the reconciler checks per witness and status in one pass (it resumes where it stopped).' },
  { key: 'reconcile.reopenAfterMs', schema: int(1000, 365 * MS_DAY), default: 3_600_000, env: 'AER1_RECONCILE_REOPEN_AFTER_MS', doc: 'A relay given up on this long ago gets a new round of attempts when the quorum cannot be met without it.' },

  { key: 'relayUpkeep.enabled', schema: bool(), default: true, env: 'AER1_RELAY_UPKEEP_ENABLED', doc: 'Re-read, on a rolling schedule over the whole history, whether each relay that accepted an anchor event (envelope, batch, NIP-03 attestation) still holds it, and publish the same signed event again where it was lost (docs/evidence.md).' },
  { key: 'relayUpkeep.intervalMs', schema: int(1000, MS_DAY), default: 600_000, env: 'AER1_RELAY_UPKEEP_INTERVAL_MS', doc: 'How often an upkeep pass runs (one daemon at a time per shard); each pass checks the next relayUpkeep.perPass events, the cursor kept in Redis, and starts over after the newest.' },
  { key: 'relayUpkeep.perPass', schema: int(1, 100_000), default: 1000, env: 'AER1_RELAY_UPKEEP_PER_PASS', doc: 'Events one upkeep pass checks on every relay that accepted them (the whole history is covered every events ÷ perPass passes).' },
  { key: 'relayUpkeep.idsPerRequest', schema: int(1, 500), default: 100, env: 'AER1_RELAY_UPKEEP_IDS_PER_REQUEST', doc: 'Event ids asked for in one REQ (an ids filter, read to EOSE); when a relay answers with some of them, the ids it left out are asked for again in a REQ of their own before they count as lost (a relay capping its answers loses nothing).' },
  { key: 'relayUpkeep.timeoutMs', schema: int(100, 120_000), default: 10_000, env: 'AER1_RELAY_UPKEEP_TIMEOUT_MS', doc: 'Deadline of one upkeep REQ (connection included); a relay that does not reach EOSE in time leaves those events unknown, never lost.' },

  { key: 'retention.confirmedDays', schema: int(0, 36_500), default: 0, env: 'AER1_RETENTION_CONFIRMED_DAYS', doc: 'Retire a confirmed subject from Redis once it was accepted this many days ago and its proof is held elsewhere: written to archive.dir and/or acknowledged by every webhook (both, when both are configured), or, with log.enabled, once it is logged and its witnesses attested its checkpoint (retired lean: its proof is rebuilt from the log; docs/reliability.md, Retention). 0: off. Refused with neither archive.dir, webhooks nor log.enabled.' },
  { key: 'retention.confirmedAfterMs', schema: int(0, 36_500 * MS_DAY), default: 0, env: 'AER1_RETENTION_CONFIRMED_AFTER_MS', doc: 'The same age in milliseconds (tests, short-lived setups); when not 0 it wins over retention.confirmedDays.' },
  { key: 'retention.intervalMs', schema: int(100, MS_DAY), default: 60_000, env: 'AER1_RETENTION_INTERVAL_MS', doc: 'How often a retention pass runs (one daemon at a time across daemons).' },
  { key: 'retention.limit', schema: int(1, 100_000), default: 1000, env: 'AER1_RETENTION_LIMIT', doc: 'Most subjects one retention pass archives and removes (the next pass goes on).' },
  { key: 'archive.dir', schema: optionalString(), default: null, env: 'AER1_ARCHIVE_DIR', doc: 'Folder of the proof archive: one aer1-anchor-proof-v1 JSON per retired subject, in folders sharded by sha256 of the key. Proofs of retired subjects are served from it.' },

  { key: 'limits.maxJobBytes', schema: int(1024, 64 * 1024 * 1024), default: 4 * 1024 * 1024, env: 'AER1_LIMIT_MAX_JOB_BYTES', doc: 'Largest job document accepted (bytes of its JSON).' },
  { key: 'limits.maxSteps', schema: int(1, 10_000_000), default: DEFAULT_LIMITS.maxSteps, env: 'AER1_LIMIT_MAX_STEPS', doc: 'Most steps in one workflow close.' },
  { key: 'limits.maxEntries', schema: int(1, 10_000_000), default: DEFAULT_LIMITS.maxEntries, env: 'AER1_LIMIT_MAX_ENTRIES', doc: 'Most entries in one job timeline.' },

  { key: 'nostr.enabled', schema: bool(), default: true, env: 'AER1_NOSTR_ENABLED', doc: 'Publish signed envelopes (or batch roots) to Nostr relays.' },
  { key: 'nostr.mode', schema: oneOf(['auto', 'envelope', 'batch']), default: 'auto', env: 'AER1_NOSTR_MODE', doc: '"auto": one event per subject while a cut, on top of the relays\' backlog or the events queued within nostr.autoHorizonMs, fits in what nostr.ratePerMinute sends in that time; else one batch event per cut (docs/nostr.md); "envelope": always one event per subject; "batch": always one event per batch (RFC 6962 root).' },
  { key: 'nostr.relays', schema: urlList(['ws:', 'wss:']), default: ['wss://relay.damus.io', 'wss://nos.lol', 'wss://relay.nostr.band'], env: 'AER1_NOSTR_RELAYS', doc: 'Relays to publish to (comma-separated in the environment).' },
  { key: 'nostr.quorum', schema: int(0, 100), default: 0, env: 'AER1_NOSTR_QUORUM', doc: 'Relays that must accept before the witness is confirmed; 0 means a majority, floor(n/2)+1 (not all: one relay refusing or down for good would keep every subject short of confirmed). Set it to the relay count to require all.' },
  { key: 'nostr.kind', schema: int(1000, 9999), default: DEFAULT_EVENT_KIND, env: 'AER1_NOSTR_KIND', doc: 'Event kind (a regular, stored kind).' },
  { key: 'nostr.keyFile', schema: string(), default: './var/nostr.key', env: 'AER1_NOSTR_KEY_FILE', doc: 'Signing key file (hex or nsec, mode 0600); created on first start when missing.' },
  { key: 'nostr.keyEnv', schema: string(), default: 'AER1_NOSTR_SECRET_KEY', env: 'AER1_NOSTR_KEY_ENV', doc: 'Name of the environment variable that may hold the signing key instead of the file.' },
  { key: 'nostr.publishTimeoutMs', schema: int(100, 120_000), default: 8000, env: 'AER1_NOSTR_PUBLISH_TIMEOUT_MS', doc: 'Deadline of one publish on one relay.' },
  { key: 'nostr.ratePerMinute', schema: int(1, 100_000), default: 6, env: 'AER1_NOSTR_RATE_PER_MINUTE', doc: 'Events per minute sent to each relay (public relays accept a handful per key).' },
  { key: 'nostr.maxAttempts', schema: int(1, 1000), default: 20, env: 'AER1_NOSTR_MAX_ATTEMPTS', doc: 'Attempts per relay and event for retryable failures before that relay is marked failed.' },
  { key: 'nostr.backoffMs', schema: int(10, MS_DAY), default: 5000, env: 'AER1_NOSTR_BACKOFF_MS', doc: 'First retry delay; doubles per attempt.' },
  { key: 'nostr.backoffMaxMs', schema: int(10, MS_DAY), default: 600_000, env: 'AER1_NOSTR_BACKOFF_MAX_MS', doc: 'Cap of the retry delay.' },
  { key: 'nostr.rateLimitBackoffMs', schema: int(10, MS_DAY), default: 10_000, env: 'AER1_NOSTR_RATE_LIMIT_BACKOFF_MS', doc: 'A "rate-limited:" answer pauses that relay\'s whole queue this long (doubling while the relay keeps answering so, up to nostr.backoffMaxMs); the event is sent again without spending an attempt.' },
  { key: 'nostr.powMaxDifficulty', schema: int(0, 64), default: 24, env: 'AER1_NOSTR_POW_MAX_DIFFICULTY', doc: 'Most NIP-13 proof of work (leading zero bits) mined for a relay that asks (NIP-11 min_pow_difficulty or a "pow:" answer naming it); a relay asking more is marked failed for the event. Each bit doubles the work.' },
  { key: 'nostr.powBudgetMs', schema: int(10, MS_DAY), default: 120_000, env: 'AER1_NOSTR_POW_BUDGET_MS', doc: 'Longest time spent mining one event\'s proof of work for one relay (in slices, off the intake path); over it that relay is marked failed for the event.' },
  { key: 'nostr.relayInfoTtlMs', schema: int(1000, MS_DAY), default: 3_600_000, env: 'AER1_NOSTR_RELAY_INFO_TTL_MS', doc: 'How long a relay\'s NIP-11 document (its stated limits) is kept before it is fetched again.' },
  { key: 'nostr.readBack', schema: bool(), default: false, env: 'AER1_NOSTR_READ_BACK', doc: 'After acceptance, read the event back by id and mark the relay "stored" when the bytes match.' },
  { key: 'nostr.nip03', schema: bool(), default: true, env: 'AER1_NOSTR_NIP03', doc: 'Envelope and auto mode with OTS on: each OTS batch also commits to the event ids of its subjects that have their own event (same single calendar submission), and once Bitcoin confirms a kind-1040 NIP-03 attestation per event is published to the relays.' },
  { key: 'nostr.batchMaxSize', schema: int(1, 1_000_000), default: 10_000, env: 'AER1_NOSTR_BATCH_MAX_SIZE', doc: 'Batch and auto mode: most subjects per cut (per batch event).' },
  { key: 'nostr.batchWindowMs', schema: int(10, MS_DAY), default: 10_000, env: 'AER1_NOSTR_BATCH_WINDOW_MS', doc: 'Batch and auto mode: longest a subject waits for its cut (and, in auto mode, the decision).' },
  { key: 'nostr.autoHorizonMs', schema: int(1000, MS_DAY), default: 60_000, env: 'AER1_NOSTR_AUTO_HORIZON_MS', doc: 'Auto mode: the window of the rate budget (nostr.ratePerMinute × this / 60 s events, at least one) that per-subject events, the slowest relay\'s backlog and the events queued within it must fit in.' },
  { key: 'nostr.concurrency', schema: int(1, 1000), default: 16, env: 'AER1_NOSTR_CONCURRENCY', doc: 'Publishes in flight per relay.' },

  { key: 'ots.enabled', schema: bool(), default: true, env: 'AER1_OTS_ENABLED', doc: 'Timestamp batch roots with OpenTimestamps calendars.' },
  { key: 'ots.calendars', schema: urlList(['http:', 'https:']), default: ['https://a.pool.opentimestamps.org', 'https://b.pool.opentimestamps.org', 'https://a.pool.eternitywall.com', 'https://ots.btc.catallaxy.com'], env: 'AER1_OTS_CALENDARS', doc: 'Calendar submit URLs (path prefixes kept).' },
  { key: 'ots.minCalendars', schema: int(1, 100), default: 2, env: 'AER1_OTS_MIN_CALENDARS', doc: 'm: calendars that must answer for a batch to be pending (else partial, retried).' },
  { key: 'ots.timeoutMs', schema: int(100, 300_000), default: 10_000, env: 'AER1_OTS_TIMEOUT_MS', doc: 'Deadline of one calendar request.' },
  { key: 'ots.batchMaxSize', schema: int(1, 10_000_000), default: 100_000, env: 'AER1_OTS_BATCH_MAX_SIZE', doc: 'Most subjects per calendar submission.' },
  { key: 'ots.batchWindowMs', schema: int(10, MS_DAY), default: 10_000, env: 'AER1_OTS_BATCH_WINDOW_MS', doc: 'Longest a subject waits for its batch.' },
  { key: 'ots.submitBackoffMs', schema: int(10, MS_DAY), default: 10_000, env: 'AER1_OTS_SUBMIT_BACKOFF_MS', doc: 'First retry delay of a submission below m; doubles, capped by ots.upgradeMaxMs.' },
  { key: 'ots.upgradeInitialMs', schema: int(10, MS_DAY), default: 300_000, env: 'AER1_OTS_UPGRADE_INITIAL_MS', doc: 'First upgrade poll after submission; doubles per poll.' },
  { key: 'ots.upgradeMaxMs', schema: int(10, MS_DAY), default: 3_600_000, env: 'AER1_OTS_UPGRADE_MAX_MS', doc: 'Cap of the upgrade poll interval.' },
  { key: 'ots.upgradeGiveUpMs', schema: int(1000, 365 * MS_DAY), default: 14 * MS_DAY, env: 'AER1_OTS_UPGRADE_GIVE_UP_MS', doc: 'A calendar still pending after this long is given up on (the others keep going).' },
  { key: 'ots.network', schema: oneOf(['mainnet', 'regtest']), default: 'mainnet', env: 'AER1_OTS_NETWORK', doc: 'Bitcoin network whose proof-of-work rules headers must meet.' },
  { key: 'ots.headersFile', schema: optionalString(), default: null, env: 'AER1_OTS_HEADERS_FILE', doc: 'Header source: JSON file {"<height>": "<80-byte header hex>"}.' },
  { key: 'ots.esploraUrl', schema: optionalUrl(['http:', 'https:']), default: 'https://blockstream.info/api', env: 'AER1_OTS_ESPLORA_URL', doc: 'Header source: Esplora-style API (used when no headers file or bitcoind is set).' },
  { key: 'ots.bitcoindUrl', schema: optionalUrl(['http:', 'https:']), default: null, env: 'AER1_OTS_BITCOIND_URL', doc: 'Header source: bitcoind JSON-RPC URL (user:password@ in the URL).' },

  { key: 'http.enabled', schema: bool(), default: true, env: 'AER1_HTTP_ENABLED', doc: 'Serve the status API, events, metrics and the status page.' },
  { key: 'http.host', schema: string(), default: '127.0.0.1', env: 'AER1_HTTP_HOST', doc: 'Address to bind (loopback by default).' },
  { key: 'http.port', schema: int(0, 65535), default: 8787, env: 'AER1_HTTP_PORT', doc: 'Port to bind (0: any free port).' },
  { key: 'http.token', schema: optionalString(), default: null, env: 'AER1_HTTP_TOKEN', doc: 'Bearer token for POST /v1/anchors (and for reads when http.readsRequireToken). Unset: POST is refused.' },
  { key: 'http.readsRequireToken', schema: bool(), default: false, env: 'AER1_HTTP_READS_REQUIRE_TOKEN', doc: 'Require the token for every read endpoint too (not /livez, /readyz).' },
  { key: 'http.maxBodyBytes', schema: int(1024, 64 * 1024 * 1024), default: 4 * 1024 * 1024, env: 'AER1_HTTP_MAX_BODY_BYTES', doc: 'Largest request body accepted.' },
  { key: 'http.redisTimeoutMs', schema: int(100, 60_000), default: 2500, env: 'AER1_HTTP_REDIS_TIMEOUT_MS', doc: 'Longest a request waits on Redis; past it, or while Redis is unreachable or refuses writes, the answer is 503 with Retry-After.' },
  { key: 'http.allowedHosts', schema: hostList(), default: ['localhost', '127.0.0.1', '[::1]'], env: 'AER1_HTTP_ALLOWED_HOSTS', doc: 'Host header names answered (any port), besides http.host when it is not a wildcard; others get 421 (DNS rebinding). "*" answers any.' },
  { key: 'http.maxLiveClients', schema: int(1, 100_000), default: 256, env: 'AER1_HTTP_MAX_LIVE_CLIENTS', doc: 'Most SSE and WebSocket clients at once; one more gets 503 with Retry-After.' },
  { key: 'http.maxReplay', schema: int(1, 1_000_000), default: 1000, env: 'AER1_HTTP_MAX_REPLAY', doc: 'Most subject events replayed to one connection after Last-Event-ID or ?since= (a packed stream entry counts as the subjects it holds); with more left, the stream ends and the client resumes from its last id, which may name an event inside an entry.' },

  { key: 'webhooks', schema: webhooks(), default: [], env: 'AER1_WEBHOOKS', doc: 'POST every state change to these: [{"url", "secret", "headers"?}] (JSON in the environment). URLs with user:password@ are refused: put credentials in "headers".' },
  { key: 'webhookDelivery.retryHorizonMs', schema: int(0, 30 * MS_DAY), default: 3 * MS_DAY, env: 'AER1_WEBHOOK_RETRY_HORIZON_MS', doc: 'A change is retried until delivered or this long after it was made (then recorded failed); attempts are computed so the capped backoff lasts this long.' },
  { key: 'webhookDelivery.backoffMs', schema: int(10, MS_DAY), default: 1000, env: 'AER1_WEBHOOK_BACKOFF_MS', doc: 'First retry delay after a failed delivery; doubles per attempt, +0–20% jitter. The hook\'s queue pauses meanwhile, so its changes stay in order.' },
  { key: 'webhookDelivery.backoffMaxMs', schema: int(10, MS_DAY), default: 60_000, env: 'AER1_WEBHOOK_BACKOFF_MAX_MS', doc: 'Cap of the retry delay (+20% jitter): a receiver back up gets its backlog within about this long.' },
  { key: 'webhookDelivery.timeoutMs', schema: int(100, 300_000), default: 10_000, env: 'AER1_WEBHOOK_TIMEOUT_MS', doc: 'Deadline of one POST (an answer after it counts as a failure).' },
  { key: 'webhookDelivery.concurrency', schema: int(1, 100), default: 1, env: 'AER1_WEBHOOK_CONCURRENCY', doc: 'POSTs in flight per hook, across every daemon; 1 keeps each hook\'s changes in order, more may reorder them.' },

  { key: 'log.level', schema: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), default: 'info', env: 'AER1_LOG_LEVEL', doc: 'Log level (pino).' },
  { key: 'log.format', schema: oneOf(['auto', 'json', 'pretty']), default: 'auto', env: 'AER1_LOG_FORMAT', doc: 'auto: human-readable lines when stderr is a terminal, JSON lines otherwise (pipe, file, journald, docker logs); json or pretty force one.' },
  { key: 'log.enabled', schema: bool(), default: false, env: 'AER1_ANCHOR_LOG_ENABLED', doc: 'The anchor log (docs/log.md): every accepted subject is appended, in acceptance order, to its shard\'s append-only Merkle log, published as C2SP tlog-tiles files under log.dir with a signed checkpoint, served at /v1/log/…, and carried in proofs (anchor_proof.log). Off by default: the log\'s folder and key belong to one state (redis.prefix), so turn it on with a log.dir of that state\'s own.' },
  { key: 'log.keyFile', schema: string(), default: './var/log.key', env: 'AER1_ANCHOR_LOG_KEY_FILE', doc: 'The anchor log\'s Ed25519 signing key (Go signer-key text, mode 0600; `aer1-anchor keygen --log --name ORIGIN` makes one); created on first start when missing, named log.origin or, unset, `aer1-anchor/<redis.prefix>`.' },
  { key: 'log.dir', schema: string(), default: './var/log', env: 'AER1_ANCHOR_LOG_DIR', doc: 'Folder of the anchor log\'s static files (checkpoint, tile/…): with one shard the log itself, with K shards one sub-folder per shard (0 … K-1). One daemon writes it at a time (a lease in Redis); any web server can serve it.' },
  { key: 'log.origin', schema: optionalString(), default: null, env: 'AER1_ANCHOR_LOG_ORIGIN', doc: 'The checkpoints\' origin line, a schema-less URL naming the log (example.com/aer1); with K shards shard i\'s is `<origin>/<i>`. Unset: the log key\'s name.' },
  { key: 'log.checkpointIntervalMs', schema: int(100, MS_DAY), default: 1000, env: 'AER1_ANCHOR_LOG_CHECKPOINT_INTERVAL_MS', doc: 'A new signed checkpoint (and the tiles it needs) at most this often while there are new entries.' },
  { key: 'log.tsaUrls', schema: urlList(['http:', 'https:']), default: [], env: 'AER1_ANCHOR_LOG_TSA_URLS', doc: 'RFC 3161 timestamp authorities asked for a token over each checkpoint\'s note body (docs/time.md); the tokens are kept beside the checkpoint (checkpoints/<size>.tsr.json) and go into proofs as anchor_proof.log.timestamps. Empty: off.' },
  { key: 'log.tsaQuorum', schema: int(0, 100), default: 0, env: 'AER1_ANCHOR_LOG_TSA_QUORUM', doc: 'm of the n TSAs: a checkpoint is asked again (every log.timeWitnessIntervalMs, at most log.timeWitnessMaxAttempts times) until m tokens are kept. 0: all n.' },
  { key: 'log.witnesses', schema: logWitnesses(), default: [], env: 'AER1_ANCHOR_LOG_WITNESSES', doc: 'C2SP witnesses sent each checkpoint with add-checkpoint (docs/witnesses.md): [{"url": "<submission prefix>", "key": "<name>+<hash>+<base64(0x04 ‖ key)>"}] (JSON in the environment). Their cosignature/v1 lines, checked against the key, are added to the kept checkpoint and to the live one while it is that size. Empty: off.' },
  { key: 'log.witnessQuorum', schema: int(0, 100), default: 0, env: 'AER1_ANCHOR_LOG_WITNESS_QUORUM', doc: 'Witnesses whose cosignature a checkpoint needs before it is left (retried like log.tsaQuorum; a witness\'s refusal is recorded, never retried). 0: all.' },
  { key: 'log.timeWitnessIntervalMs', schema: int(100, MS_DAY), default: 5000, env: 'AER1_ANCHOR_LOG_TIME_WITNESS_INTERVAL_MS', doc: 'How often the checkpoints without their TSA tokens and cosignatures are looked for (each pass takes at most 16 checkpoints, oldest first, from a cursor kept in the log folder).' },
  { key: 'log.timeWitnessMaxAttempts', schema: int(1, 1000), default: 10, env: 'AER1_ANCHOR_LOG_TIME_WITNESS_MAX_ATTEMPTS', doc: 'Passes one checkpoint is tried in while a TSA or witness fails retryably (timeout, network, 5xx); then it is left below its quorum (logged, counted) and the next is taken.' },
] as const satisfies readonly KeySpec[];

type Entry = (typeof CONFIG_KEYS)[number];
export type ConfigKey = Entry['key'];
type Simplify<T> = { [K in keyof T]: T[K] } & {};
type Section<K> = K extends `${infer S}.${string}` ? S : never;
type DefaultOf<K> = Entry extends infer E ? (E extends { key: K; default: infer D } ? D : never) : never;
type Value<E> = E extends { schema: infer S extends z.ZodType } ? z.output<S> : never;

/** The validated configuration: sections of keys, each typed by its schema's output. */
export type Config = Simplify<
  { [S in Section<ConfigKey>]: Simplify<{ [E in Entry as E['key'] extends `${S}.${infer L}` ? L : never]: Value<E> }> } & {
    [E in Entry as E['key'] extends `${string}.${string}` ? never : E['key']]: Value<E>;
  }
>;

const BY_KEY: ReadonlyMap<string, KeySpec> = new Map(CONFIG_KEYS.map((k) => [k.key, k]));

export function keySpec(key: string): KeySpec | undefined {
  return BY_KEY.get(key);
}

/** The built-in default of `key`, for code that may run without a loaded configuration. */
export function configDefault<K extends ConfigKey>(key: K): DefaultOf<K> {
  return BY_KEY.get(key)!.default as DefaultOf<K>;
}

/** The configuration as one zod object (strict: unknown keys are refused), built from the table. */
export const configSchema: z.ZodType<Config> = (() => {
  const sections = new Map<string, Record<string, z.ZodType>>();
  const top: Record<string, z.ZodType> = {};
  for (const spec of CONFIG_KEYS) {
    const dot = spec.key.indexOf('.');
    if (dot < 0) {
      top[spec.key] = spec.schema;
      continue;
    }
    const section = spec.key.slice(0, dot);
    let shape = sections.get(section);
    if (!shape) sections.set(section, (shape = {}));
    shape[spec.key.slice(dot + 1)] = spec.schema;
  }
  for (const [name, shape] of sections) top[name] = z.strictObject(shape);
  return z.strictObject(top) as unknown as z.ZodType<Config>;
})();
