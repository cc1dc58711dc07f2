/**
 * Configuration: built-in defaults, then `config/default.json`, then `--config FILE`,
 * then environment variables. Validated once at start; an error names the bad key.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonSyntaxReason, UsageError } from '../../core/errors/errors.js';
import { PACKAGE_ROOT } from '../../version.js';
import { displayUrl } from './display-url.js';
import { normalHostName } from './host-names.js';
import { CONFIG_KEYS, type KeySpec, type KeyType } from './schema.js';

export interface WebhookConfig {
  url: string;
  secret: string;
  /** Extra request headers (a receiver's own credential, for one); never shown or stored. */
  headers?: Record<string, string>;
}

export interface Config {
  redis: { url: string | null; prefix: string; localDefault: boolean; embedded: boolean; embeddedDir: string };
  queue: { name: string; concurrency: number; stalledIntervalMs: number; maxSubjectsPerJob: number };
  reconcile: { intervalMs: number; limit: number; reopenAfterMs: number };
  limits: { maxJobBytes: number; maxSteps: number; maxEntries: number };
  nostr: {
    enabled: boolean;
    mode: 'auto' | 'envelope' | 'batch';
    relays: string[];
    quorum: number;
    kind: number;
    keyFile: string;
    keyEnv: string;
    publishTimeoutMs: number;
    ratePerMinute: number;
    maxAttempts: number;
    backoffMs: number;
    backoffMaxMs: number;
    rateLimitBackoffMs: number;
    powMaxDifficulty: number;
    powBudgetMs: number;
    relayInfoTtlMs: number;
    readBack: boolean;
    nip03: boolean;
    batchMaxSize: number;
    batchWindowMs: number;
    autoHorizonMs: number;
    concurrency: number;
  };
  ots: {
    enabled: boolean;
    calendars: string[];
    minCalendars: number;
    timeoutMs: number;
    batchMaxSize: number;
    batchWindowMs: number;
    submitBackoffMs: number;
    upgradeInitialMs: number;
    upgradeMaxMs: number;
    upgradeGiveUpMs: number;
    network: 'mainnet' | 'regtest';
    headersFile: string | null;
    esploraUrl: string | null;
    bitcoindUrl: string | null;
  };
  http: {
    enabled: boolean;
    host: string;
    port: number;
    token: string | null;
    readsRequireToken: boolean;
    maxBodyBytes: number;
    redisTimeoutMs: number;
    allowedHosts: string[];
    maxLiveClients: number;
    maxReplay: number;
  };
  webhooks: WebhookConfig[];
  webhookDelivery: { retryHorizonMs: number; backoffMs: number; backoffMaxMs: number; timeoutMs: number; concurrency: number };
  log: { level: string; format: 'auto' | 'json' | 'pretty' };
}

export const DEFAULT_CONFIG_FILE = join(PACKAGE_ROOT, 'config', 'default.json');

/** A bad setting is a usage error (exit 2 in every CLI), naming the key. */
function bad(key: string, message: string): never {
  throw new UsageError(`config ${key}: ${message}`, 'bad_config');
}

/** Errors show a URL as scheme, host and path: its credentials or query may be secret. */
function checkUrl(key: string, value: unknown, protocols: readonly string[]): string {
  if (typeof value !== 'string') bad(key, `expected a URL string, got ${value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return bad(key, 'not a URL (the text is not shown: it may hold a credential)');
  }
  if (!protocols.includes(url.protocol)) bad(key, `URL must use ${protocols.join(' or ')}: ${JSON.stringify(displayUrl(value))}`);
  return value;
}

const WEBHOOK_KEYS = '{"url", "secret", "headers"?}';
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;
const HEADER_VALUE = /^[\t\x20-\x7e]{1,4096}$/;
/** Headers the daemon sets itself on every delivery. */
const OWN_HEADERS = new Set(['content-type', 'content-length', 'transfer-encoding', 'connection', 'host', 'user-agent']);
const MAX_WEBHOOK_HEADERS = 16;

function checkWebhookUrl(key: string, value: unknown): string {
  const url = checkUrl(key, value, ['http:', 'https:']);
  const u = new URL(url);
  if (u.username !== '' || u.password !== '') {
    bad(key, `a webhook URL must not carry credentials (user:password@ in ${JSON.stringify(displayUrl(url))}): fetch refuses such URLs and the URL is shown in logs and reports. Put the receiver's credential in the hook's "headers" (e.g. {"Authorization": "Basic …"}); "secret" signs every body`);
  }
  return url;
}

/** Header values are never echoed: they are credentials. */
function checkWebhookHeaders(key: string, value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) bad(key, 'expected an object of header names to text values');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_WEBHOOK_HEADERS) bad(key, `at most ${MAX_WEBHOOK_HEADERS} headers`);
  const out: Record<string, string> = {};
  const seen = new Set<string>();
  for (const [name, v] of entries) {
    if (!HEADER_NAME.test(name)) bad(`${key}[${JSON.stringify(name.slice(0, 64))}]`, 'not an HTTP header name');
    const lower = name.toLowerCase();
    if (OWN_HEADERS.has(lower) || lower.startsWith('x-aer1-')) bad(`${key}.${name}`, 'the daemon sets this header itself');
    if (seen.has(lower)) bad(`${key}.${name}`, 'header given twice (names are case-insensitive)');
    seen.add(lower);
    if (typeof v !== 'string' || !HEADER_VALUE.test(v)) bad(`${key}.${name}`, 'expected 1 to 4096 printable ASCII characters (the value is not shown)');
    out[name] = v;
  }
  return out;
}

function checkHostList(key: string, value: unknown): string[] {
  if (!Array.isArray(value)) bad(key, 'expected a list of host names');
  return value.map((v, i) => {
    if (v === '*') return '*';
    if (typeof v !== 'string') return bad(`${key}[${i}]`, 'expected a host name');
    const name = normalHostName(v);
    if (name === null) bad(`${key}[${i}]`, `not a host name or address without a port (every port is answered): ${JSON.stringify(v.slice(0, 80))}`);
    return name;
  });
}

/** Validates one value (from JSON or already parsed from the environment). */
function checkValue(key: string, type: KeyType, value: unknown): unknown {
  switch (type.kind) {
    case 'string':
      if (typeof value !== 'string' || value.length === 0) bad(key, `expected a non-empty string, got ${JSON.stringify(value)}`);
      return value;
    case 'optional-string':
      if (value === null) return null;
      if (typeof value !== 'string' || value.length === 0) bad(key, `expected a non-empty string or null`);
      return value;
    case 'int':
      if (typeof value !== 'number' || !Number.isInteger(value)) bad(key, `expected an integer, got ${JSON.stringify(value)}`);
      if (value < type.min || value > type.max) bad(key, `must be between ${type.min} and ${type.max}, got ${value}`);
      return value;
    case 'bool':
      if (typeof value !== 'boolean') bad(key, `expected true or false, got ${JSON.stringify(value)}`);
      return value;
    case 'enum':
      if (typeof value !== 'string' || !type.values.includes(value)) bad(key, `must be one of ${type.values.join(', ')}, got ${JSON.stringify(value)}`);
      return value;
    case 'optional-url':
      return value === null ? null : checkUrl(key, value, type.protocols);
    case 'url-list': {
      if (!Array.isArray(value)) bad(key, 'expected a list of URLs');
      const urls = value.map((v, i) => checkUrl(`${key}[${i}]`, v, type.protocols));
      if (new Set(urls).size !== urls.length) bad(key, 'lists a URL twice');
      return urls;
    }
    case 'host-list':
      return checkHostList(key, value);
    case 'webhooks': {
      if (!Array.isArray(value)) bad(key, `expected a list of ${WEBHOOK_KEYS}`);
      return value.map((hook, i): WebhookConfig => {
        if (typeof hook !== 'object' || hook === null || Array.isArray(hook)) bad(`${key}[${i}]`, `expected ${WEBHOOK_KEYS}`);
        const { url, secret, headers, ...rest } = hook as Record<string, unknown>;
        const extra = Object.keys(rest);
        if (extra.length > 0) bad(`${key}[${i}].${extra[0]}`, 'unknown key');
        if (typeof secret !== 'string' || secret.length < 16) bad(`${key}[${i}].secret`, 'expected a secret of at least 16 characters');
        const checked: WebhookConfig = { url: checkWebhookUrl(`${key}[${i}].url`, url), secret };
        if (headers !== undefined) checked.headers = checkWebhookHeaders(`${key}[${i}].headers`, headers);
        return checked;
      });
    }
  }
}

/** Parses an environment variable's text into the value its key expects. */
function fromEnv(spec: KeySpec, text: string): unknown {
  const { key, type } = spec;
  switch (type.kind) {
    case 'int': {
      if (!/^-?\d+$/.test(text.trim())) bad(key, `${spec.env} must be an integer, got ${JSON.stringify(text)}`);
      return Number(text.trim());
    }
    case 'bool': {
      const t = text.trim().toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(t)) return true;
      if (['0', 'false', 'no', 'off'].includes(t)) return false;
      return bad(key, `${spec.env} must be true or false, got ${JSON.stringify(text)}`);
    }
    case 'url-list':
    case 'host-list':
      return text.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
    case 'webhooks':
      try {
        return JSON.parse(text);
      } catch {
        return bad(key, `${spec.env} must be JSON`);
      }
    case 'optional-string':
    case 'optional-url':
      return text.trim() === '' ? null : text.trim();
    default:
      return text.trim();
  }
}

function flatten(obj: unknown, source: string): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    throw new UsageError(`${source} must hold a JSON object`, 'bad_config');
  }
  const known = new Set(CONFIG_KEYS.map((k) => k.key));
  const walk = (node: Record<string, unknown>, path: string): void => {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$comment') continue;
      const key = path ? `${path}.${k}` : k;
      if (known.has(key)) {
        out.set(key, v);
      } else if (typeof v === 'object' && v !== null && !Array.isArray(v) && [...known].some((n) => n.startsWith(`${key}.`))) {
        walk(v as Record<string, unknown>, key);
      } else {
        bad(key, `unknown key in ${source}`);
      }
    }
  };
  walk(obj as Record<string, unknown>, '');
  return out;
}

function readConfigFile(file: string): Map<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read config file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`config file ${file} is not JSON: ${jsonSyntaxReason(err)}`);
  }
  return flatten(parsed, file);
}

export interface LoadOptions {
  /** `--config FILE`, applied over config/default.json. */
  file?: string | undefined;
  /** Environment to read overrides from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Skip config/default.json (tests): built-in defaults, then file, then env. */
  skipDefaultFile?: boolean;
  /** Values applied last (tests and the demo). */
  overrides?: Record<string, unknown>;
}

export function loadConfig(opts: LoadOptions = {}): Config {
  const env = opts.env ?? process.env;
  const values = new Map<string, unknown>(CONFIG_KEYS.map((k) => [k.key, k.default]));
  const layers: Map<string, unknown>[] = [];
  if (!opts.skipDefaultFile) layers.push(readConfigFile(DEFAULT_CONFIG_FILE));
  if (opts.file) layers.push(readConfigFile(opts.file));
  for (const layer of layers) for (const [k, v] of layer) values.set(k, v);
  for (const spec of CONFIG_KEYS) {
    const text = env[spec.env];
    if (text !== undefined) values.set(spec.key, fromEnv(spec, text));
  }
  if (opts.overrides) for (const [k, v] of flatten(opts.overrides, 'overrides')) values.set(k, v);

  const root: Record<string, unknown> = {};
  for (const spec of CONFIG_KEYS) {
    const value = checkValue(spec.key, spec.type, values.get(spec.key));
    const parts = spec.key.split('.');
    let node = root;
    for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as Record<string, unknown>;
    node[parts[parts.length - 1]!] = value;
  }
  const config = root as unknown as Config;
  crossCheck(config);
  return config;
}

function crossCheck(c: Config): void {
  if (c.nostr.enabled && c.nostr.relays.length === 0) bad('nostr.relays', 'nostr is enabled but no relay is configured');
  if (c.nostr.quorum > c.nostr.relays.length) bad('nostr.quorum', `quorum ${c.nostr.quorum} exceeds the ${c.nostr.relays.length} configured relays`);
  if (c.ots.enabled && c.ots.calendars.length === 0) bad('ots.calendars', 'ots is enabled but no calendar is configured');
  if (c.ots.enabled && c.ots.minCalendars > c.ots.calendars.length) {
    bad('ots.minCalendars', `m = ${c.ots.minCalendars} exceeds the ${c.ots.calendars.length} configured calendars`);
  }
  if (!c.nostr.enabled && !c.ots.enabled) bad('nostr.enabled', 'no witness is enabled (nostr.enabled and ots.enabled are both false)');
  if (c.nostr.backoffMaxMs < c.nostr.backoffMs) bad('nostr.backoffMaxMs', 'must be at least nostr.backoffMs');
  if (c.webhookDelivery.backoffMaxMs < c.webhookDelivery.backoffMs) bad('webhookDelivery.backoffMaxMs', 'must be at least webhookDelivery.backoffMs');
  if (c.ots.upgradeMaxMs < c.ots.upgradeInitialMs) bad('ots.upgradeMaxMs', 'must be at least ots.upgradeInitialMs');
}

/** The quorum in force: 0 (the default) means a majority of the configured relays, floor(n/2)+1. */
export function nostrQuorum(c: Config): number {
  return c.nostr.quorum === 0 ? Math.floor(c.nostr.relays.length / 2) + 1 : c.nostr.quorum;
}

export function enabledWitnesses(c: Config): Array<'nostr' | 'ots'> {
  const out: Array<'nostr' | 'ots'> = [];
  if (c.nostr.enabled) out.push('nostr');
  if (c.ots.enabled) out.push('ots');
  return out;
}
