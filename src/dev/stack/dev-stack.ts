/**
 * `aer1-anchor dev-stack`'s stack: the loopback stack (stack.ts) with calendars that mine
 * on their own, the config it runs with written beside its files, and what a developer or
 * a test needs to talk to it (URLs, token, signer, headers file) as one description.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RelayProfileName } from '../relay/dev-relay.js';
import type { DevCalendar, MineResult } from '../calendar/index.js';
import { startStack, type DevStack } from './stack.js';

export interface DevStackOptions {
  /** Folder for the config, key, headers file and daemon log (created by the caller). */
  out: string;
  relayProfiles: readonly RelayProfileName[];
  calendarCount: number;
  /** How often each calendar mines while it holds commitments. */
  mineEveryMs: number;
  /** The daemon's HTTP port (0: a free one). */
  httpPort: number;
  onMined?: (calendar: DevCalendar, block: MineResult) => void;
  onMineError?: (calendar: DevCalendar, err: Error) => void;
}

/** What `dev-stack --json` prints: everything a client needs to use the stack. */
export interface DevStackInfo {
  http: string;
  token: string;
  relays: string[];
  /** Each relay's profile, in the order of `relays`. */
  relay_profiles: RelayProfileName[];
  calendars: string[];
  /** The dev RFC 3161 TSA and its CA certificate (PEM: `aer1-verify-anchor --tsa-ca`). */
  tsa: string;
  tsa_ca: string;
  /** The dev C2SP witnesses' URLs and verifier keys (`aer1-verify-anchor --witness`). */
  witnesses: Array<{ url: string; key: string }>;
  /** The daemon's Nostr signer, hex (what `--expected-pubkey` takes). */
  signer: string;
  npub: string;
  /** The regtest headers file the calendars extend as they mine (`aer1-verify-anchor --headers`). */
  headers: string;
  network: 'regtest';
  /** The config file the daemon runs with (mode 0600: it holds the token). */
  config: string;
  log: string;
  redis: string;
  out: string;
  mine_every_ms: number;
  /** Every loopback port the stack listens on. */
  ports: number[];
}

export interface RunningDevStack {
  readonly stack: DevStack;
  readonly info: DevStackInfo;
  stop(): Promise<void>;
}

export const CONFIG_FILE = 'config.json';

export async function startDevStack(opts: DevStackOptions): Promise<RunningDevStack> {
  const stack = await startStack(opts.out, {
    relayProfiles: opts.relayProfiles,
    calendarCount: opts.calendarCount,
    mineEveryMs: opts.mineEveryMs,
    quorum: 'majority',
    httpPort: opts.httpPort,
    keyFileName: 'nostr.key',
    onMined: opts.onMined,
    onMineError: opts.onMineError,
  });
  try {
    const http = stack.running.httpUrl!;
    const config = join(opts.out, CONFIG_FILE);
    // the port as bound, so the file says where this stack's daemon listens
    const settings = { ...stack.settings, http: { ...(stack.settings['http'] as object), port: Number(new URL(http).port) } };
    writeFileSync(config, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
    const info: DevStackInfo = {
      http,
      token: stack.token,
      relays: stack.relays.map((r) => r.url),
      relay_profiles: [...opts.relayProfiles],
      calendars: stack.calendars.map((c) => c.url),
      tsa: stack.tsa.url,
      tsa_ca: stack.files.tsaCa,
      witnesses: stack.witnesses.map((w) => ({ url: w.url, key: w.verifierKey })),
      signer: stack.pubkey,
      npub: stack.npub,
      headers: stack.files.headers,
      network: 'regtest',
      config,
      log: stack.files.log,
      redis: stack.redis.url,
      out: opts.out,
      mine_every_ms: opts.mineEveryMs,
      ports: stack.ports(),
    };
    return { stack, info, stop: () => stack.stop() };
  } catch (err) {
    await stack.stop();
    throw err;
  }
}

/** The human-readable description `dev-stack` prints without `--json`. */
export function describeDevStack(info: DevStackInfo): string {
  const client = 'python3 clients/python/aer1_anchor.py';
  return [
    'aer1-anchor dev-stack: the daemon, dev relays, dev calendars (regtest), a dev TSA and two dev witnesses on loopback, until Ctrl-C.',
    '',
    `  http       ${info.http}  (status page ${info.http}/, browser verifier ${info.http}/verify)`,
    `  token      ${info.token}`,
    `  relays     ${info.relays.map((url, i) => `${url} (${info.relay_profiles[i]})`).join(', ')}`,
    `  calendars  ${info.calendars.join(', ')} (each mines a regtest block every ${info.mine_every_ms / 1000} s while it holds commitments)`,
    `  tsa        ${info.tsa} (CA ${info.tsa_ca})`,
    `  witnesses  ${info.witnesses.map((w) => `${w.url} (${w.key})`).join(', ')}`,
    `  signer     ${info.signer} (${info.npub})`,
    `  headers    ${info.headers}`,
    `  network    ${info.network}`,
    `  config     ${info.config}`,
    `  redis      ${info.redis} (private; removed at the end)`,
    `  daemon log ${info.log}`,
    '',
    'Try:',
    `  export AER1_ANCHOR_URL=${info.http} AER1_ANCHOR_TOKEN=${info.token}`,
    `  ${client} enqueue receipt.json`,
    `  ${client} wait KEY --until confirmed --timeout 60 && ${client} proof KEY --attach receipt.json`,
    `  aer1-verify-anchor receipt.json --headers ${info.headers} --network regtest --expected-pubkey ${info.signer} --tsa-ca ${info.tsa_ca}${info.witnesses.map((w) => ` --witness ${w.key}`).join('')}`,
    `  aer1-anchor status KEY --config ${info.config}`,
    '',
  ].join('\n');
}
