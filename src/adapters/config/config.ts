/**
 * Configuration: the built-in defaults (schema.ts), then `--config FILE`, then environment
 * variables, then overrides (tests, the demo). Validated once at start against the zod
 * schema in schema.ts; an error is one line naming the bad key (and the environment
 * variable when the value came from one), never a secret's text.
 */
import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { jsonSyntaxReason, UsageError } from '../../core/errors/errors.js';
import { CONFIG_KEYS, configSchema, keySpec, settingMeta, type Config, type KeySpec } from './schema.js';

export type { Config, WebhookConfig } from './schema.js';

/** A bad setting is a usage error (exit 2 in every CLI), naming the key. */
function bad(key: string, message: string): never {
  throw new UsageError(`config ${key}: ${message}`, 'bad_config');
}

/** Parses an environment variable's text into the value its key's schema checks. */
function fromEnv(spec: KeySpec, text: string): unknown {
  const form = settingMeta.get(spec.schema)?.env ?? 'text';
  switch (form) {
    case 'int': {
      if (!/^-?\d+$/.test(text.trim())) bad(spec.key, `${spec.env} must be an integer, got ${JSON.stringify(text)}`);
      return Number(text.trim());
    }
    case 'bool': {
      const t = text.trim().toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(t)) return true;
      if (['0', 'false', 'no', 'off'].includes(t)) return false;
      return bad(spec.key, `${spec.env} must be true or false, got ${JSON.stringify(text)}`);
    }
    case 'list':
      return text.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
    case 'json':
      try {
        return JSON.parse(text);
      } catch {
        return bad(spec.key, `${spec.env} must be JSON`);
      }
    case 'optional-text':
      return text.trim() === '' ? null : text.trim();
    case 'text':
      return text.trim();
  }
}

/** `key`, `key[0]`, `key[0].url`, `key[0].headers.Name`: the path of one zod issue below a key. */
function issuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else if (/^[A-Za-z0-9_$-]+$/.test(String(part))) out += out === '' ? String(part) : `.${String(part)}`;
    else out += `[${JSON.stringify(String(part))}]`;
  }
  return out;
}

/** The first issue as one line: the key (and the variable, when the value came from the environment), then what is wrong. */
function issueLine(issue: z.core.$ZodIssue, fromEnvVar: ReadonlyMap<string, string>): string {
  let path = issuePath(issue.path);
  let message = issue.message;
  if (issue.code === 'unrecognized_keys') {
    path = issuePath([...issue.path, issue.keys[0]!]);
    message = 'unknown key';
  }
  const top = issue.path.length >= 2 && keySpec(`${String(issue.path[0])}.${String(issue.path[1])}`) ? `${String(issue.path[0])}.${String(issue.path[1])}` : String(issue.path[0]);
  const env = fromEnvVar.get(top);
  return `config ${path}: ${message}${env ? ` (from ${env})` : ''}`;
}

function flatten(obj: unknown, source: string): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    throw new UsageError(`${source} must hold a JSON object`, 'bad_config');
  }
  const known = new Set<string>(CONFIG_KEYS.map((k) => k.key));
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
  /** `--config FILE`, applied over the built-in defaults. */
  file?: string | undefined;
  /** Environment to read overrides from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Values applied last (tests and the demo). */
  overrides?: Record<string, unknown>;
}

export function loadConfig(opts: LoadOptions = {}): Config {
  const env = opts.env ?? process.env;
  const values = new Map<string, unknown>(CONFIG_KEYS.map((k) => [k.key, k.default]));
  const fromEnvVar = new Map<string, string>();
  if (opts.file) for (const [k, v] of readConfigFile(opts.file)) values.set(k, v);
  for (const spec of CONFIG_KEYS) {
    const text = env[spec.env];
    if (text === undefined) continue;
    values.set(spec.key, fromEnv(spec, text));
    fromEnvVar.set(spec.key, spec.env);
  }
  if (opts.overrides) {
    for (const [k, v] of flatten(opts.overrides, 'overrides')) {
      values.set(k, v);
      fromEnvVar.delete(k);
    }
  }

  const root: Record<string, unknown> = {};
  for (const [key, value] of values) {
    const parts = key.split('.');
    let node = root;
    for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as Record<string, unknown>;
    node[parts[parts.length - 1]!] = value;
  }
  const result = configSchema.safeParse(root);
  if (!result.success) throw new UsageError(issueLine(result.error.issues[0]!, fromEnvVar), 'bad_config');
  crossCheck(result.data, (key, message) => bad(key, `${message}${fromEnvVar.has(key) ? ` (from ${fromEnvVar.get(key)})` : ''}`));
  return result.data;
}

/** Checks across keys; `fail` names the key (and its variable when the value came from the environment). */
function crossCheck(c: Config, fail: (key: string, message: string) => never): void {
  if (c.redis.url !== null && c.redis.cluster.length > 0) fail('redis.cluster', 'redis.url and redis.cluster are both set: set redis.url for one Redis or redis.cluster for a Redis Cluster, not both');
  if (c.nostr.enabled && c.nostr.relays.length === 0) fail('nostr.relays', 'nostr is enabled but no relay is configured');
  if (c.nostr.quorum > c.nostr.relays.length) fail('nostr.quorum', `quorum ${c.nostr.quorum} exceeds the ${c.nostr.relays.length} configured relays`);
  if (c.ots.enabled && c.ots.calendars.length === 0) fail('ots.calendars', 'ots is enabled but no calendar is configured');
  if (c.ots.enabled && c.ots.minCalendars > c.ots.calendars.length) {
    fail('ots.minCalendars', `m = ${c.ots.minCalendars} exceeds the ${c.ots.calendars.length} configured calendars`);
  }
  if (!c.nostr.enabled && !c.ots.enabled) fail('nostr.enabled', 'no witness is enabled (nostr.enabled and ots.enabled are both false)');
  if (c.nostr.backoffMaxMs < c.nostr.backoffMs) fail('nostr.backoffMaxMs', 'must be at least nostr.backoffMs');
  if (c.webhookDelivery.backoffMaxMs < c.webhookDelivery.backoffMs) fail('webhookDelivery.backoffMaxMs', 'must be at least webhookDelivery.backoffMs');
  if (retentionAfterMs(c) > 0 && c.archive.dir === null && c.webhooks.length === 0 && !c.log.enabled) {
    const key = c.retention.confirmedAfterMs > 0 ? 'retention.confirmedAfterMs' : 'retention.confirmedDays';
    fail(key, 'retention is on but there is nowhere to hand proofs to before subjects are removed: set archive.dir, or webhooks (every hook must acknowledge a proof), or both, or log.enabled (subjects logged and final are retired lean)');
  }
  if (c.log.tsaQuorum > c.log.tsaUrls.length) fail('log.tsaQuorum', `m = ${c.log.tsaQuorum} exceeds the ${c.log.tsaUrls.length} configured TSAs`);
  if (c.log.witnessQuorum > c.log.witnesses.length) fail('log.witnessQuorum', `quorum ${c.log.witnessQuorum} exceeds the ${c.log.witnesses.length} configured witnesses`);
  if (!c.log.enabled && (c.log.tsaUrls.length > 0 || c.log.witnesses.length > 0)) fail(c.log.tsaUrls.length > 0 ? 'log.tsaUrls' : 'log.witnesses', 'TSAs and witnesses attest the anchor log\'s checkpoints: set log.enabled');
  if (c.ots.upgradeMaxMs < c.ots.upgradeInitialMs) fail('ots.upgradeMaxMs', 'must be at least ots.upgradeInitialMs');
}

/** The age (ms since acceptance) past which a confirmed subject is retired from Redis; 0: retention off. */
export function retentionAfterMs(c: Config): number {
  return c.retention.confirmedAfterMs > 0 ? c.retention.confirmedAfterMs : c.retention.confirmedDays * 86_400_000;
}

/** The quorum in force: 0 (the default) means a majority of the configured relays, floor(n/2)+1. */
export function nostrQuorum(c: Config): number {
  return c.nostr.quorum === 0 ? Math.floor(c.nostr.relays.length / 2) + 1 : c.nostr.quorum;
}

/** m of the configured TSAs / witnesses a checkpoint needs: 0 (the default) means all. */
export function logTimeQuorums(c: Config): { tsa: number; witness: number } {
  return {
    tsa: c.log.tsaQuorum === 0 ? c.log.tsaUrls.length : c.log.tsaQuorum,
    witness: c.log.witnessQuorum === 0 ? c.log.witnesses.length : c.log.witnessQuorum,
  };
}

export function enabledWitnesses(c: Config): Array<'nostr' | 'ots'> {
  const out: Array<'nostr' | 'ots'> = [];
  if (c.nostr.enabled) out.push('nostr');
  if (c.ots.enabled) out.push('ots');
  return out;
}
