/**
 * Byte reading and writing for the `.ots` format: fixed bytes, varuint (unsigned
 * LEB128, as python-opentimestamps writes it) and varbytes (varuint length + bytes).
 * The reader is strict: it never reads past the end, refuses varuints that are not in
 * their shortest form (they would not round-trip) or exceed 2^53 - 1.
 */
import { OtsFormatError, type OtsErrorCode } from './errors.js';

export class ByteReader {
  private pos: number;
  private readonly end: number;

  /** Reads `bytes[start, end)`; offsets in errors are relative to `bytes` plus `base`. */
  constructor(
    private readonly bytes: Uint8Array,
    start = 0,
    end = bytes.length,
    private readonly base = 0,
  ) {
    this.pos = start;
    this.end = end;
  }

  /** Absolute offset of the next byte (for error messages). */
  get offset(): number {
    return this.base + this.pos;
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  get atEnd(): boolean {
    return this.pos >= this.end;
  }

  readByte(what: string): number {
    if (this.pos >= this.end) throw new OtsFormatError('ots_truncated', `input ends where ${what} was expected`, this.offset);
    return this.bytes[this.pos++]!;
  }

  readBytes(n: number, what: string): Buffer {
    if (n > this.end - this.pos) {
      throw new OtsFormatError('ots_truncated', `input ends inside ${what} (${n} bytes needed, ${this.end - this.pos} left)`, this.offset);
    }
    const out = Buffer.from(this.bytes.subarray(this.pos, this.pos + n));
    this.pos += n;
    return out;
  }

  /** A sub-reader over the next `n` bytes (which this reader skips). */
  take(n: number, what: string): ByteReader {
    if (n > this.end - this.pos) {
      throw new OtsFormatError('ots_truncated', `input ends inside ${what} (${n} bytes needed, ${this.end - this.pos} left)`, this.offset);
    }
    const sub = new ByteReader(this.bytes, this.pos, this.pos + n, this.base);
    this.pos += n;
    return sub;
  }

  readVaruint(what: string): number {
    const start = this.offset;
    let value = 0;
    let scale = 1;
    for (let i = 0; ; i++) {
      const b = this.readByte(what);
      value += (b & 0x7f) * scale;
      if (!Number.isSafeInteger(value) || (i >= 7 && b & 0x80)) {
        throw new OtsFormatError('ots_varuint_too_large', `${what} exceeds 2^53 - 1`, start);
      }
      if ((b & 0x80) === 0) {
        if (b === 0 && i > 0) throw new OtsFormatError('ots_varuint_not_minimal', `${what} is not in its shortest form`, start);
        return value;
      }
      scale *= 128;
    }
  }

  /** varuint length then that many bytes; the length must lie in [min, max]. */
  readVarbytes(min: number, max: number, what: string, code: OtsErrorCode): Buffer {
    const start = this.offset;
    const n = this.readVaruint(`length of ${what}`);
    if (n > max) throw new OtsFormatError(code, `${what} of ${n} bytes exceeds ${max}`, start);
    if (n < min) throw new OtsFormatError(code, `${what} of ${n} bytes is shorter than ${min}`, start);
    return this.readBytes(n, what);
  }
}

/** Appends chunks; `bytes()` joins them once. */
export class ByteWriter {
  private readonly chunks: Uint8Array[] = [];
  private length = 0;

  write(chunk: Uint8Array): void {
    this.chunks.push(chunk);
    this.length += chunk.length;
  }

  writeByte(b: number): void {
    this.write(Uint8Array.of(b));
  }

  writeVaruint(n: number): void {
    this.write(encodeVaruint(n));
  }

  writeVarbytes(b: Uint8Array): void {
    this.writeVaruint(b.length);
    this.write(b);
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.length);
  }
}

/** Unsigned LEB128 in its shortest form (python-opentimestamps `write_varuint`). */
export function encodeVaruint(n: number): Buffer {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`varuint out of range: ${n}`);
  const out: number[] = [];
  let v = n;
  do {
    let b = v % 128;
    v = Math.floor(v / 128);
    if (v > 0) b |= 0x80;
    out.push(b);
  } while (v > 0);
  return Buffer.from(out);
}
