/**
 * A development OpenTimestamps calendar that speaks the real protocol and byte layout
 * (opentimestamps-server's `POST /digest` and `GET /timestamp/<hex>`), plus a dev-only
 * `POST /mine` that commits everything pending into a synthetic regtest block with a
 * real 80-byte header and real proof of work, appended to a headers file.
 *
 * The parts: `commitment-book.ts` (rounds, pending and confirmed commitments),
 * `dev-chain.ts` (the regtest chain), `block-miner.ts` (one mine at a time),
 * `http-handler.ts` (the endpoints), `behaviour.ts` (fault modes and the real server's
 * awkward answers: Not found, gzip, slow).
 *
 * Not for production: commitments live in memory, and `POST /mine` is unauthenticated.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InputError } from '../../core/errors/errors.js';
import { checkMode, DEFAULT_BEHAVIOUR, MODES, mergeBehaviour, type DevCalendarBehaviour, type DevCalendarMode } from './behaviour.js';
import { BlockMiner, type MineResult } from './block-miner.js';
import { CommitmentBook, type RoundsFrom } from './commitment-book.js';
import { DevChain } from './dev-chain.js';
import { createHandler, sendError } from './http-handler.js';
import { checkPendingUri } from './ots-ops.js';

export { MAX_DIGEST_LENGTH, PENDING_REASON, NOT_FOUND_REASON } from './http-handler.js';
export type { DevCalendarBehaviour, DevCalendarMode } from './behaviour.js';
export type { MineResult } from './block-miner.js';

export interface DevCalendarOptions extends Partial<DevCalendarBehaviour> {
  /** 0 (default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** JSON headers file `{"<height>": "<header hex>"}`, shared safely by several calendars. */
  headersOut?: string;
  /** The URL pending attestations name (default `http://host:port` + basePath). */
  publicUrl?: string;
  /** Serve under a path prefix, e.g. `/ots/a` → `POST /ots/a/digest`. Default: none. */
  basePath?: string;
  /** Length of one aggregation round in ms (the real server: 1000). */
  aggregationMs?: number;
  /**
   * When a round closes (commitment-book.ts): `clock` (default), on a clock of
   * aggregationMs as the real server, so a submission waits up to one round; `first-digest`,
   * one round after its first digest, so that digest is held in flight a whole round.
   */
  roundsFrom?: RoundsFrom;
  /** Secret behind the 8-byte MACs (default: 32 random bytes). */
  hmacKey?: Buffer;
  /** Height of the first block when the headers file is empty or absent (default 1). */
  startHeight?: number;
  /** Extra transactions after the commitment tx in each mined block (default 0). */
  fillerTxs?: number;
}

export interface DevCalendarStats {
  digestsReceived: number;
  rounds: number;
  pendingCommitments: number;
  confirmedCommitments: number;
  lastHeight: number | null;
}

export interface DevCalendar {
  /** Base URL of the calendar (the one pending attestations name). */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
  mine(): Promise<MineResult>;
  /** Commitments (not digests) waiting for the next `mine()`. */
  pendingCount(): number;
  setMode(mode: DevCalendarMode): void;
  /** Changes the given behaviour switches (Not-found window, gzip, delay); the rest stay. */
  setBehaviour(change: Partial<DevCalendarBehaviour>): void;
  behaviour(): DevCalendarBehaviour;
  stats(): DevCalendarStats;
}

function normalizeBasePath(p: string | undefined): string {
  if (!p || p === '/') return '';
  const trimmed = p.replace(/\/+$/, '');
  if (!/^\/[A-Za-z0-9\-._/]*$/.test(trimmed)) {
    throw new InputError('bad_option', `basePath ${JSON.stringify(p)} must start with / and use A-Za-z0-9-._/`, 'basePath');
  }
  return trimmed;
}

function checkInt(name: string, v: number, max = Number.MAX_SAFE_INTEGER): void {
  if (!Number.isInteger(v) || v < 0 || v > max) throw new InputError('bad_option', `${name} must be an integer in 0..${max}`, name);
}

/** The URI pending attestations will name, checked as the `.ots` format requires. */
function pendingUri(opts: DevCalendarOptions, host: string, port: number, basePath: string): string {
  let uri: string;
  if (opts.publicUrl) {
    uri = opts.publicUrl.replace(/\/$/, '');
  } else {
    if (host.includes(':')) throw new InputError('bad_option', `an IPv6 host (${host}) cannot be named in a pending attestation; give publicUrl`, 'publicUrl');
    uri = `http://${host}:${port}${basePath}`;
  }
  const problem = checkPendingUri(uri);
  if (problem) throw new InputError('bad_option', problem, 'publicUrl');
  return uri;
}

export async function startDevCalendar(opts: DevCalendarOptions = {}): Promise<DevCalendar> {
  const { host, basePath, aggregationMs, startHeight, fillerTxs } = checkedSettings(opts);
  const state: CalendarState = {
    mode: 'ok',
    behaviour: mergeBehaviour(DEFAULT_BEHAVIOUR, { notFoundMs: opts.notFoundMs, gzip: opts.gzip, delayMs: opts.delayMs }),
    uri: '',
  };
  const book = new CommitmentBook({ aggregationMs, roundsFrom: opts.roundsFrom ?? 'clock', hmacKey: opts.hmacKey ?? randomBytes(32), uri: () => state.uri });
  const chain = new DevChain({ headersOut: opts.headersOut, startHeight, fillerTxs });
  await chain.init();
  const miner = new BlockMiner(book, chain);
  const sleepers = new Sleepers();
  const handle = createHandler({
    basePath,
    book,
    mine: () => miner.mine(),
    mode: () => state.mode,
    setMode: (m) => {
      state.mode = m;
    },
    behaviour: () => state.behaviour,
    homePage: () => homePage(state, book, miner.lastHeight),
    sleep: (ms) => sleepers.sleep(ms),
  });
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => sendError(res, err));
  });
  const port = await listen(server, opts.port ?? 0, host);
  try {
    state.uri = pendingUri(opts, host, port, basePath);
  } catch (err) {
    server.close();
    throw err;
  }
  return devCalendarHandle({ state, port, book, miner, sleepers, server });
}

interface CalendarSettings {
  host: string;
  basePath: string;
  aggregationMs: number;
  startHeight: number;
  fillerTxs: number;
}

/** The options with their defaults, each checked. */
function checkedSettings(opts: DevCalendarOptions): CalendarSettings {
  const host = opts.host ?? '127.0.0.1';
  const basePath = normalizeBasePath(opts.basePath);
  const aggregationMs = opts.aggregationMs ?? 1000;
  const startHeight = opts.startHeight ?? 1;
  const fillerTxs = opts.fillerTxs ?? 0;
  checkInt('aggregationMs', aggregationMs);
  checkInt('startHeight', startHeight);
  checkInt('fillerTxs', fillerTxs, 1000);
  return { host, basePath, aggregationMs, startHeight, fillerTxs };
}

/** What changes while the calendar runs; `uri` is known once the port is. */
interface CalendarState {
  mode: DevCalendarMode;
  behaviour: DevCalendarBehaviour;
  uri: string;
}

/** Delayed answers wake early when the calendar closes, so close() never waits on them. */
class Sleepers {
  private readonly waiting = new Set<() => void>();

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiting.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiting.add(done);
    });
  }

  wakeAll(): void {
    for (const wake of [...this.waiting]) wake();
  }
}

function homePage(state: CalendarState, book: CommitmentBook, lastHeight: number | null): string {
  const { mode, behaviour } = state;
  return [
    'aer1-anchor development OpenTimestamps calendar (not for production)',
    `calendar: ${state.uri}`,
    `pending commitments: ${book.pendingCount}`,
    `confirmed commitments: ${book.confirmedCount}`,
    `last mined height: ${lastHeight ?? 'none'}`,
    `mode: ${mode}; not-found window ${behaviour.notFoundMs} ms; gzip ${behaviour.gzip ? 'on' : 'off'}; delay ${behaviour.delayMs} ms`,
    `POST /digest, GET /timestamp/<hex>; dev only: POST /mine, POST /mode/<${MODES.join('|')}>`,
    '',
  ].join('\n');
}

/** Listens on host:port (0: a free one) and resolves with the bound port. */
async function listen(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

interface CalendarParts {
  state: CalendarState;
  port: number;
  book: CommitmentBook;
  miner: BlockMiner;
  sleepers: Sleepers;
  server: Server;
}

/** The `DevCalendar` callers hold: its URL, mine(), switches, stats and close(). */
function devCalendarHandle({ state, port, book, miner, sleepers, server }: CalendarParts): DevCalendar {
  let closed: Promise<void> | null = null;
  return {
    url: state.uri,
    port,
    close(): Promise<void> {
      closed ??= new Promise<void>((resolve) => {
        book.abortRound('dev calendar closed');
        sleepers.wakeAll();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
    mine: () => miner.mine(),
    pendingCount: () => book.pendingCount,
    setMode(m: DevCalendarMode): void {
      state.mode = checkMode(m);
    },
    setBehaviour(change: Partial<DevCalendarBehaviour>): void {
      state.behaviour = mergeBehaviour(state.behaviour, change);
    },
    behaviour: () => ({ ...state.behaviour }),
    stats: () => ({
      digestsReceived: book.digestsReceived,
      rounds: book.rounds,
      pendingCommitments: book.pendingCount,
      confirmedCommitments: book.confirmedCount,
      lastHeight: miner.lastHeight,
    }),
  };
}
