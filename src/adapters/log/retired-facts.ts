/**
 * The facts a subject retired lean keeps (docs/reliability.md, Retention): with the anchor log
 * on, a confirmed subject whose witnesses attested its log checkpoint leaves Redis but for its
 * entry in the log's index (`{prefix}:log:idx`), whose value becomes `<log index>:<facts>`
 * instead of `<log index>`. The facts are what its proof takes that the log folder does not
 * hold: its witnesses and their batches (whose hashes keep the checkpoint event, the
 * calendars' answers and the Bitcoin block once per batch), its envelope's `anchored_at` and
 * its claims. The entry itself (`d`, kind, key) is in the folder's tiles. Pure: no Redis here.
 *
 * Bytes after the colon: one flags byte (bit 0 Nostr, bit 1 OpenTimestamps; other bits 0),
 * `anchored_at` as Unix seconds (unsigned LEB128), then per witness flagged, Nostr first, its
 * batch id `<seq>-<12 hex>` as the sequence number (LEB128) and the 6 bytes of the hex, then
 * the claims to the end: per member one code byte (its place in CLAIM_CODES), one length byte
 * and the value as core/envelope/compact.ts packs it.
 */
import type { CompactMembers } from '../../core/envelope/compact.js';

/** The witnesses a retired subject may have had, in the order their batches are kept (the state's WITNESSES). */
const WITNESSES = ['nostr', 'ots'] as const;
type WitnessName = (typeof WITNESSES)[number];

/** The envelope members a claims code names, by code. */
export const CLAIM_CODES: readonly string[] = ['output_sha256', 'evidence_sha256', 'evidence_byte_length', 'evidence_url', 'workflow_id', 'merkle_root', 'merkle_version', 'step_count', 'final_entry_digest', 'entry_count'];

export interface RetiredFacts {
  /** The subject's witnesses, each with its batch id (a checkpoint batch). */
  batches: Partial<Record<WitnessName, string>>;
  /** The envelope's `anchored_at`, Unix seconds. */
  anchoredAt: number;
  /** The envelope's claims (packEnvelope with no `at` member: anchored_at is kept above). */
  claims: CompactMembers;
}

const FLAG: Record<WitnessName, number> = { nostr: 1, ots: 2 };
const BATCH_ID = /^([0-9]{1,15})-([0-9a-f]{12})$/;

function varint(n: number, out: number[]): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`not a count: ${n}`);
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
}

/** A batch id the facts can keep, or false. */
export function packableBatchId(id: string): boolean {
  return BATCH_ID.test(id);
}

/** The facts as bytes (after `<index>:`); throws on a batch id or claim it cannot keep (check packable first). */
export function encodeFacts(f: RetiredFacts): Buffer {
  const out: number[] = [0];
  for (const w of WITNESSES) if (f.batches[w] !== undefined) out[0]! |= FLAG[w];
  varint(f.anchoredAt, out);
  for (const w of WITNESSES) {
    const id = f.batches[w];
    if (id === undefined) continue;
    const m = BATCH_ID.exec(id);
    if (!m) throw new RangeError(`batch id ${JSON.stringify(id.slice(0, 40))} is not <seq>-<12 hex>`);
    varint(Number(m[1]), out);
    out.push(...Buffer.from(m[2]!, 'hex'));
  }
  for (const [member, value] of f.claims) {
    const code = CLAIM_CODES.indexOf(member);
    if (code < 0 || value.length > 255) throw new RangeError(`claim ${JSON.stringify(member.slice(0, 40))} cannot be kept`);
    out.push(code, value.length, ...value);
  }
  return Buffer.from(out);
}

/** Facts read back; throws naming what is wrong with bytes that are not facts. */
export function decodeFacts(buf: Buffer): RetiredFacts {
  let i = 0;
  const byte = (what: string): number => {
    if (i >= buf.length) throw new Error(`retired facts: cut short in ${what}`);
    return buf[i++]!;
  };
  const readVarint = (what: string): number => {
    let n = 0;
    for (let shift = 1, k = 0; k < 8; k++, shift *= 0x80) {
      const b = byte(what);
      n += (b & 0x7f) * shift;
      if (b < 0x80) return n;
    }
    throw new Error(`retired facts: ${what} is too long`);
  };
  const flags = byte('flags');
  if ((flags & ~3) !== 0) throw new Error(`retired facts: unknown flags ${flags}`);
  const anchoredAt = readVarint('anchored_at');
  const batches: RetiredFacts['batches'] = {};
  for (const w of WITNESSES) {
    if ((flags & FLAG[w]) === 0) continue;
    const seq = readVarint(`${w} batch`);
    if (i + 6 > buf.length) throw new Error(`retired facts: cut short in ${w} batch`);
    batches[w] = `${seq}-${buf.subarray(i, i + 6).toString('hex')}`;
    i += 6;
  }
  const claims: CompactMembers = new Map();
  while (i < buf.length) {
    const member = CLAIM_CODES[byte('claim')];
    if (member === undefined) throw new Error(`retired facts: unknown claim code ${buf[i - 1]}`);
    const len = byte(member);
    if (i + len > buf.length) throw new Error(`retired facts: cut short in ${member}`);
    claims.set(member, Buffer.from(buf.subarray(i, i + len)));
    i += len;
  }
  return { batches, anchoredAt, claims };
}

/** The value `{prefix}:log:idx` keeps for a key: `<index>` while the subject is in Redis, `<index>:<facts>` once retired lean. */
export interface LogIndexValue {
  index: number;
  /** The facts' bytes, or null while the subject is in Redis. */
  facts: Buffer | null;
}

/** A log:idx value read (as bytes or text); null for none. */
export function readLogIndex(raw: Buffer | string | null): LogIndexValue | null {
  if (raw === null) return null;
  const buf = typeof raw === 'string' ? Buffer.from(raw, 'latin1') : raw;
  const colon = buf.indexOf(0x3a);
  const digits = (colon < 0 ? buf : buf.subarray(0, colon)).toString('latin1');
  if (!/^[0-9]{1,15}$/.test(digits)) throw new Error(`anchor log index value ${JSON.stringify(digits.slice(0, 20))} is not an index`);
  return { index: Number(digits), facts: colon < 0 ? null : Buffer.from(buf.subarray(colon + 1)) };
}

/** The log:idx value of a subject retired lean. */
export function retiredValue(index: number, facts: RetiredFacts): Buffer {
  return Buffer.concat([Buffer.from(`${index}:`), encodeFacts(facts)]);
}
