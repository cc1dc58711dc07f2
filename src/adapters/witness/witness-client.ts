/**
 * A C2SP tlog-witness client: `POST <prefix>/add-checkpoint` with the old size, the
 * consistency proof from it and the signed checkpoint. 200: the witness's cosignature/v1
 * lines, kept only when they verify under the witness key the caller configured (lines by
 * other keys are ignored, as the spec asks). 409 with `text/x.tlog.size`: resent once more
 * from the size the witness names, with a proof the caller makes (`proofFor`). 404, 403,
 * 422 and 400 are the witness's verdicts: typed errors, never retried here. Each request
 * has one deadline (connect to last byte) and the answer is capped while it streams in.
 */
import { parseCheckpointText } from '../../core/log/checkpoint.js';
import { parseNote } from '../../core/log/note.js';
import { formatAddCheckpointRequest, parseTlogSize, TLOG_SIZE_TYPE } from '../../core/witness/add-checkpoint.js';
import { parseSignatureLines, parseWitnessKey, verifyCosignature, type WitnessKey } from '../../core/witness/cosignature.js';
import { InputError } from '../../core/errors/errors.js';
import { VERSION } from '../../version.js';
import { WitnessError } from './witness-error.js';
import { readBoundedBody } from '../fetch/bounded-body.js';

/** A consistency proof (RFC 6962 2.1.2) from `oldSize` to `newSize` of the caller's log. */
export type ProofFor = (oldSize: number, newSize: number) => readonly Uint8Array[] | Promise<readonly Uint8Array[]>;

export interface WitnessClientOptions {
  /** Deadline per request, connect to last body byte (default 10,000 ms). */
  readonly timeoutMs?: number;
  /** Largest answer read (default 64 KiB: 100 signature lines fit). */
  readonly maxResponseBytes?: number;
  /** Resends after a 409 that names another old size (default 2). */
  readonly maxResends?: number;
}

export interface Cosigned {
  /** The witness's cosignature lines that verify under its key, each ending in a newline. */
  readonly lines: readonly string[];
  /** POSIX seconds of the earliest of them. */
  readonly time: number;
  /** The old size of the request the witness accepted. */
  readonly oldSize: number;
  /** Requests sent. */
  readonly attempts: number;
}

function oneLine(body: Buffer): string {
  return body.subarray(0, 160).toString('utf8').replace(/[^\x20-\x7e]+/g, ' ').trim();
}

export class WitnessClient {
  readonly url: string;
  readonly key: WitnessKey;
  private readonly endpoint: string;
  private readonly timeoutMs: number;
  private readonly maxResponseBytes: number;
  private readonly maxResends: number;

  constructor(url: string, witnessKey: WitnessKey | string, options: WitnessClientOptions = {}) {
    let base: URL;
    try {
      base = new URL(url);
    } catch {
      throw new InputError('bad_url', `${JSON.stringify(url.slice(0, 80))} is not a URL`, 'witness url');
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new InputError('bad_url', 'an http or https URL', 'witness url');
    this.url = url;
    // the submission prefix keeps its path: <prefix>/add-checkpoint
    this.endpoint = `${base.href.replace(/\/+$/, '')}/add-checkpoint`;
    this.key = typeof witnessKey === 'string' ? parseWitnessKey(witnessKey) : witnessKey;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxResponseBytes = options.maxResponseBytes ?? 64 * 1024;
    this.maxResends = options.maxResends ?? 2;
    for (const [name, v] of [['timeoutMs', this.timeoutMs], ['maxResponseBytes', this.maxResponseBytes]] as const) {
      if (!Number.isSafeInteger(v) || v <= 0) throw new InputError('bad_option', `${name} must be a positive integer, got ${v}`, name);
    }
    if (!Number.isSafeInteger(this.maxResends) || this.maxResends < 0 || this.maxResends > 10) throw new InputError('bad_option', `maxResends must be in 0..10, got ${this.maxResends}`, 'maxResends');
  }

  /**
   * Asks the witness to cosign `note` (a signed checkpoint). `oldSize` is the size the
   * witness last cosigned as far as the caller knows (0 when it does not know).
   */
  async addCheckpoint(note: string, proofFor: ProofFor, oldSize = 0): Promise<Cosigned> {
    const parsed = parseNote(note, 'checkpoint');
    const checkpoint = parseCheckpointText(parsed.text, 'checkpoint');
    if (!Number.isSafeInteger(oldSize) || oldSize < 0 || oldSize > checkpoint.size) {
      throw new InputError('bad_option', `old size ${oldSize} is not in 0..${checkpoint.size}`, 'oldSize');
    }
    let old = oldSize;
    for (let attempt = 1; ; attempt++) {
      const proof = old === 0 || old === checkpoint.size ? [] : await proofFor(old, checkpoint.size);
      const { status, type, body } = await this.post(formatAddCheckpointRequest(old, proof, note));
      if (status === 200) return { ...this.cosignatures(parsed.text, body), oldSize: old, attempts: attempt };
      const said = oneLine(body);
      const detail = `HTTP ${status} from ${this.endpoint}${said ? `: ${said}` : ''}`;
      if (status === 409) {
        const media = (type ?? '').split(';')[0]!.trim().toLowerCase();
        if (media !== TLOG_SIZE_TYPE) throw new WitnessError('witness_bad_response', this.url, `${detail} (a 409 without ${TLOG_SIZE_TYPE})`, { status });
        let known: number;
        try {
          known = parseTlogSize(body);
        } catch {
          throw new WitnessError('witness_bad_response', this.url, `${detail} (an unreadable ${TLOG_SIZE_TYPE} body)`, { status });
        }
        if (known > checkpoint.size) {
          throw new WitnessError('witness_ahead', this.url, `it cosigned size ${known}, past this checkpoint's ${checkpoint.size}: the log went back or forked`, { status, knownSize: known });
        }
        // witnesses on tlog-witness before its July 2026 revision answered a same-size fork with 409
        if (known === old && old === checkpoint.size) throw new WitnessError('witness_inconsistent', this.url, `${detail} (it cosigned size ${known} with another root: a fork)`, { status, knownSize: known });
        if (known === old) throw new WitnessError('witness_bad_response', this.url, `${detail} (a 409 naming the old size sent, ${old})`, { status, knownSize: known });
        if (attempt > this.maxResends) throw new WitnessError('witness_conflict', this.url, `still a conflict after ${attempt} requests (it now says ${known})`, { status, knownSize: known });
        old = known;
        continue;
      }
      if (status === 404) throw new WitnessError('witness_unknown_origin', this.url, `${detail} (it does not know the origin ${JSON.stringify(checkpoint.origin)})`, { status });
      if (status === 403) throw new WitnessError('witness_forbidden', this.url, `${detail} (no signature by a log key it trusts verifies)`, { status });
      if (status === 422) throw new WitnessError('witness_inconsistent', this.url, `${detail} (not consistent with what it cosigned: a fork, or a bad proof)`, { status });
      if (status === 400) throw new WitnessError('witness_bad_request', this.url, detail, { status });
      throw new WitnessError('witness_http_status', this.url, detail, { status });
    }
  }

  /** The answer's lines by this witness's key, each checked; other keys' lines are ignored. */
  private cosignatures(text: string, body: Buffer): { lines: string[]; time: number } {
    let sigs;
    let raw: string;
    try {
      raw = new TextDecoder('utf-8', { fatal: true }).decode(body);
      sigs = parseSignatureLines(raw, 'answer');
    } catch (err) {
      throw new WitnessError('witness_bad_response', this.url, `the 200 answer is not signature lines: ${(err as Error).message}`, { status: 200 });
    }
    const lines = raw.slice(0, -1).split('\n');
    const mine: string[] = [];
    let earliest: bigint | null = null;
    sigs.forEach((sig, i) => {
      if (sig.name !== this.key.name || sig.keyId !== this.key.keyId) return;
      const r = verifyCosignature(text, sig, this.key);
      if (!r.ok) throw new WitnessError('witness_bad_cosignature', this.url, `its cosignature does not check under ${this.key.text}: ${r.reason}`, { status: 200 });
      if (earliest === null || r.timestamp < earliest) earliest = r.timestamp;
      mine.push(`${lines[i]!}\n`);
    });
    if (earliest === null) throw new WitnessError('witness_bad_response', this.url, `the 200 answer holds no cosignature by ${this.key.text}`, { status: 200 });
    return { lines: mine, time: Number(earliest) };
  }

  private async post(body: Buffer): Promise<{ status: number; type: string | null; body: Buffer }> {
    const deadline = AbortSignal.timeout(this.timeoutMs);
    const over = new AbortController();
    const signal = AbortSignal.any([deadline, over.signal]);
    const fail = (err: unknown, stage: string): WitnessError => {
      if (err instanceof WitnessError) return err;
      if (deadline.aborted) return new WitnessError('witness_timeout', this.url, `no complete answer from POST ${this.endpoint} within ${this.timeoutMs} ms (${stage})`);
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      return new WitnessError('witness_network', this.url, `POST ${this.endpoint} failed (${stage}): ${cause?.code ?? cause?.message ?? (err as Error).message}`);
    };
    let res: Response;
    try {
      res = await fetch(this.endpoint, {
        method: 'POST',
        headers: { 'Content-Type': 'text/plain; charset=utf-8', 'User-Agent': `aer1-anchor/${VERSION}`, 'Accept-Encoding': 'identity' },
        body,
        signal,
        redirect: 'error',
      });
    } catch (err) {
      throw fail(err, 'connecting');
    }
    const tooLarge = (what: string): WitnessError => {
      over.abort();
      return new WitnessError('witness_too_large', this.url, `answer ${what} exceeds ${this.maxResponseBytes} bytes`, { status: res.status });
    };
    const answer = await readBoundedBody(res, this.maxResponseBytes, tooLarge, (err) => fail(err, 'reading the body'));
    return { status: res.status, type: res.headers.get('content-type'), body: answer };
  }
}
