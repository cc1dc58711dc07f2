/**
 * Fuzzing settings: a fixed seed (AER1_FUZZ_SEED overrides it, to replay or explore) and
 * bounded run counts (AER1_FUZZ_RUNS multiplies them), so CI is repeatable and bounded.
 */
import type { Parameters } from 'fast-check';

export const SEED = Number(process.env.AER1_FUZZ_SEED ?? 20_261_129);
const SCALE = Number(process.env.AER1_FUZZ_RUNS_SCALE ?? 1);

export function fuzzParams<T>(numRuns: number): Parameters<T> {
  return { seed: SEED, numRuns: Math.max(1, Math.round(numRuns * SCALE)), endOnFailure: true };
}

/** Runs `fn`, returning how long it took (to report the slowest input; never asserted). */
export function timed<T>(fn: () => T): { value: T; ms: number } {
  const t0 = performance.now();
  const value = fn();
  return { value, ms: performance.now() - t0 };
}

/** Byte-level mutations a fuzzer applies to a valid input. */
export type ByteMutation =
  | { kind: 'flip'; at: number; xor: number }
  | { kind: 'insert'; at: number; bytes: number[] }
  | { kind: 'delete'; at: number; count: number }
  | { kind: 'duplicate'; at: number; count: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'append'; bytes: number[] };

export function applyByteMutation(base: Uint8Array, m: ByteMutation): Buffer {
  const b = Buffer.from(base);
  const at = (n: number): number => (b.length === 0 ? 0 : n % (b.length + 1));
  switch (m.kind) {
    case 'flip': {
      if (b.length === 0) return b;
      const i = m.at % b.length;
      b[i] = b[i]! ^ m.xor;
      return b;
    }
    case 'insert':
      return Buffer.concat([b.subarray(0, at(m.at)), Buffer.from(m.bytes), b.subarray(at(m.at))]);
    case 'delete':
      return Buffer.concat([b.subarray(0, at(m.at)), b.subarray(Math.min(b.length, at(m.at) + m.count))]);
    case 'duplicate': {
      const i = at(m.at);
      const chunk = b.subarray(i, i + m.count);
      return Buffer.concat([b.subarray(0, i), chunk, chunk, b.subarray(i + m.count)]);
    }
    case 'truncate':
      return b.subarray(0, at(m.at));
    case 'append':
      return Buffer.concat([b, Buffer.from(m.bytes)]);
  }
}
