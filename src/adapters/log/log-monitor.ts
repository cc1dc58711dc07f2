/**
 * `aer1-anchor monitor`'s round: reads the log's checkpoint (signed by a key the caller
 * trusts), checks the whole tree from the tiles (log-check.ts), proves it consistent with
 * the last checkpoint this monitor verified and with every checkpoint event it has not yet
 * placed, and lists the entries added since. Two signed checkpoints that are not consistent
 * are a fork, reported with both notes. Works on any C2SP tlog-tiles log: it reads
 * `checkpoint` and `tile/…` only. The last verified checkpoint is kept in a state file,
 * replaced atomically.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { InputError, UsageError } from '../../core/errors/errors.js';
import { decodeEntry } from '../../core/log/entry.js';
import { MAX_NOTE_BYTES, type VerifierKey } from '../../core/log/note.js';
import { openCheckpoint } from '../../core/log/checkpoint.js';
import type { PageBound, RelayAnswer } from '../../core/verify/relay-pages.js';
import type { RelayFetcher } from '../../core/verify/online.js';
import { replaceFile } from '../files/replace-file.js';
import { listCheckpointEvents } from './checkpoint-events.js';
import { inspectLog, type LogInspection, type OlderCheckpoint, type OlderResult } from './log-check.js';
import type { LogSource } from './log-source.js';

/** What a monitor keeps between rounds and runs. */
export interface MonitorState {
  /** The last checkpoint proven (signed note, as served), or null before the first. */
  readonly checkpoint: string | null;
  /** Newest checkpoint event read (unix seconds): the next listing starts there. */
  readonly relaySince: number | null;
}

const STATE_MAX_BYTES = MAX_NOTE_BYTES + 4096;

/** The state file, or an empty state when it does not exist; anything else unreadable is a usage error. */
export function readMonitorState(file: string): MonitorState {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { checkpoint: null, relaySince: null };
    throw new UsageError(`cannot read --state ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, 'unreadable');
  }
  let text: string;
  try {
    const size = fstatSync(fd).size;
    if (size > STATE_MAX_BYTES) throw new UsageError(`--state ${file} is ${size} bytes, over the ${STATE_MAX_BYTES} a monitor state holds`, 'unreadable');
    const buf = Buffer.alloc(size);
    const n = readSync(fd, buf, 0, size, 0);
    text = buf.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError(`--state ${file} is not JSON: not a monitor state`, 'unreadable');
  }
  const v = value as Partial<Record<string, unknown>>;
  const cpOk = v.checkpoint === null || typeof v.checkpoint === 'string';
  const sinceOk = v.relay_since === null || (Number.isSafeInteger(v.relay_since) && (v.relay_since as number) >= 0);
  if (typeof value !== 'object' || value === null || v.version !== 1 || !cpOk || !sinceOk) {
    throw new UsageError(`--state ${file}: not a monitor state ({"version": 1, "checkpoint", "relay_since"})`, 'unreadable');
  }
  if (typeof v.checkpoint === 'string') {
    try {
      openCheckpoint(v.checkpoint, [], `--state ${file}: checkpoint`);
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      throw new UsageError(err.message, 'unreadable');
    }
  }
  return { checkpoint: v.checkpoint as string | null, relaySince: v.relay_since as number | null };
}

export async function writeMonitorState(file: string, state: MonitorState): Promise<void> {
  await replaceFile(file, Buffer.from(`${JSON.stringify({ version: 1, checkpoint: state.checkpoint, relay_since: state.relaySince })}\n`), 0o600);
}

export interface MonitorOptions {
  readonly source: LogSource;
  readonly trusted: readonly VerifierKey[];
  readonly maxEntries?: number;
  /** New entries listed one by one in a round; the rest are counted. */
  readonly maxListed?: number;
  /** The checkpoint events' relays and authors (hex); none: the log alone. */
  readonly relays?: { readonly urls: readonly string[]; readonly authors: readonly string[]; readonly fetcher: RelayFetcher; readonly bound?: PageBound };
}

type Brief = { size: number; root: string };

export interface MonitorEntry {
  readonly index: number;
  readonly kind: string;
  readonly key: string;
  readonly digest: string;
}

/** One round as `--json` prints it (docs/log.md). */
export interface MonitorRound {
  round: number;
  at: string;
  prefix: string;
  /** ok: the log holds together and every checkpoint placed is consistent; fork; fail (the log's own checks, a rollback); untrusted (the checkpoint is signed by no key given); unreadable. */
  verdict: 'ok' | 'fork' | 'fail' | 'untrusted' | 'unreadable';
  checkpoint: (Brief & { origin: string }) | null;
  /** The last verified checkpoint this round started from. */
  previous: Brief | null;
  /** Checkpoints proven a prefix of this one: the last verified, and checkpoint events. */
  consistent: Array<Brief & { source: string }>;
  forks: Array<{ source: string; checkpoint: Brief | null; note: string; against: Brief | null; against_note: string | null; detail: string }>;
  /** Checkpoint events larger than the checkpoint served: placed in a later round. */
  ahead: Array<Brief & { source: string }>;
  /** Notes signed by no key given: reported, never trusted. */
  untrusted: Array<{ source: string; detail: string }>;
  /** Checkpoint events of other logs of the same author (other shards). */
  other_logs: number;
  problems: string[];
  entries: { from: number; to: number; listed: MonitorEntry[]; omitted: number };
  relays: RelayAnswer[];
}

const brief = (c: { size: number; root: string } | null): Brief | null => (c === null ? null : { size: c.size, root: c.root });

/**
 * Follows one log. Keeps the last verified checkpoint (in `state`) and the checkpoint
 * events already placed (in memory: a note proven a prefix of a checkpoint is a prefix of
 * every later one proven consistent with it).
 */
export class LogMonitor {
  private readonly placed = new Set<string>();
  private rounds = 0;

  constructor(private readonly options: MonitorOptions, public state: MonitorState) {}

  async round(): Promise<MonitorRound> {
    const n = ++this.rounds;
    const previousNote = this.state.checkpoint;
    const previous = previousNote === null ? null : openCheckpoint(previousNote, this.options.trusted).checkpoint;
    const from = previous?.size ?? 0;
    const out: MonitorRound = {
      round: n, at: new Date().toISOString(), prefix: this.options.source.prefix, verdict: 'ok', checkpoint: null,
      previous: previous === null ? null : { size: previous.size, root: previous.root.toString('base64') },
      consistent: [], forks: [], ahead: [], untrusted: [], other_logs: 0, problems: [], entries: { from, to: from, listed: [], omitted: 0 }, relays: [],
    };
    const maxListed = this.options.maxListed ?? 100_000;
    let inspection: LogInspection;
    let events: OlderCheckpoint[] = [];
    let newest: number | null = null;
    try {
      // the relays first: a checkpoint event then runs ahead of the log only if the log fell behind it
      if (this.options.relays) {
        const r = this.options.relays;
        const listed = await listCheckpointEvents({ relays: r.urls, authors: r.authors, fetcher: r.fetcher, ...(this.state.relaySince !== null ? { since: this.state.relaySince } : {}), ...(r.bound ? { bound: r.bound } : {}) });
        out.relays = listed.relays;
        events = listed.notes.filter((e) => !this.placed.has(e.note as string));
        // an answer cut short may have left older events unread: the next round lists from where this one did
        newest = listed.relays.every((a) => a.complete) ? listed.newest : null;
      }
      const older: OlderCheckpoint[] = [...(previousNote === null ? [] : [{ name: 'the last verified checkpoint', note: previousNote }]), ...events];
      inspection = await inspectLog(this.options.source, {
        trusted: this.options.trusted,
        older,
        ...(this.options.maxEntries !== undefined ? { maxEntries: this.options.maxEntries } : {}),
        onEntry: (index, entry) => {
          if (index < from) return;
          if (out.entries.listed.length >= maxListed) {
            out.entries.omitted++;
            return;
          }
          try {
            const e = decodeEntry(entry);
            out.entries.listed.push({ index, kind: e.kind, key: e.key, digest: Buffer.from(e.digest).toString('hex') });
          } catch {
            out.entries.omitted++; // the entries check names it
          }
        },
      });
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      out.verdict = 'unreadable';
      out.problems.push(err.message);
      return out;
    }
    const report = inspection.report;
    out.checkpoint = report.checkpoint;
    out.entries.to = Math.max(from, report.checkpoint?.size ?? from);
    const cpCheck = report.checks.find((c) => c.name === 'checkpoint');
    if (cpCheck?.status === 'nothing') {
      out.verdict = 'untrusted';
      out.problems.push(cpCheck.detail);
      return out;
    }
    for (const c of report.checks) if (c.status === 'fail' && c.name !== 'consistency') out.problems.push(`${c.name}: ${c.detail}`);
    for (const r of inspection.older) this.place(r, r.name === 'the last verified checkpoint', inspection.note, out);
    out.verdict = out.forks.length > 0 ? 'fork' : out.problems.length > 0 ? 'fail' : 'ok';
    if (out.verdict === 'ok' && inspection.note !== null && report.checkpoint !== null && report.checkpoint.size >= from) {
      this.state = { checkpoint: inspection.note, relaySince: newest ?? this.state.relaySince };
    } else if (out.verdict !== 'ok') {
      out.entries = { from, to: from, listed: [], omitted: 0 };
    }
    return out;
  }

  private place(r: OlderResult, last: boolean, current: string | null, out: MonitorRound): void {
    const c = r.checkpoint;
    switch (r.status) {
      case 'consistent':
        this.placed.add(r.note);
        out.consistent.push({ source: r.name, size: c!.size, root: c!.root });
        return;
      case 'fork':
        out.forks.push({ source: r.name, checkpoint: brief(c), note: r.note, against: brief(out.checkpoint), against_note: current, detail: r.detail });
        return;
      case 'ahead':
        if (last) out.problems.push(`rollback: ${r.detail}`);
        else out.ahead.push({ source: r.name, size: c!.size, root: c!.root });
        return;
      case 'untrusted':
        this.placed.add(r.note);
        if (last) out.problems.push(`${r.detail} (was it verified with other keys?)`);
        else out.untrusted.push({ source: r.name, detail: r.detail });
        return;
      case 'other-log':
        this.placed.add(r.note);
        if (last) out.problems.push(r.detail);
        else out.other_logs++;
        return;
      default:
        out.problems.push(r.detail);
    }
  }
}
