/**
 * Keccak-256 (the original Keccak padding, as Ethereum and python-opentimestamps'
 * `OpKECCAK256` use it; not SHA3-256). Node's OpenSSL has no Keccak, so it is written
 * here: Keccak-f[1600] on 64-bit lanes held as (lo, hi) 32-bit pairs.
 */

const RATE = 136;

// Round constants as [lo, hi] pairs.
const RC: readonly number[] = [
  0x00000001, 0x00000000, 0x00008082, 0x00000000, 0x0000808a, 0x80000000, 0x80008000, 0x80000000,
  0x0000808b, 0x00000000, 0x80000001, 0x00000000, 0x80008081, 0x80000000, 0x00008009, 0x80000000,
  0x0000008a, 0x00000000, 0x00000088, 0x00000000, 0x80008009, 0x00000000, 0x8000000a, 0x00000000,
  0x8000808b, 0x00000000, 0x0000008b, 0x80000000, 0x00008089, 0x80000000, 0x00008003, 0x80000000,
  0x00008002, 0x80000000, 0x00000080, 0x80000000, 0x0000800a, 0x00000000, 0x8000000a, 0x80000000,
  0x80008081, 0x80000000, 0x00008080, 0x80000000, 0x80000001, 0x00000000, 0x80008008, 0x80000000,
];

// Rotation offsets, indexed x + 5y.
const ROT: readonly number[] = [0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14];

function keccakF(s: Uint32Array): void {
  const c = new Uint32Array(10);
  const b = new Uint32Array(50);
  for (let round = 0; round < 24; round++) {
    // theta
    for (let x = 0; x < 5; x++) {
      c[2 * x] = s[2 * x]! ^ s[2 * x + 10]! ^ s[2 * x + 20]! ^ s[2 * x + 30]! ^ s[2 * x + 40]!;
      c[2 * x + 1] = s[2 * x + 1]! ^ s[2 * x + 11]! ^ s[2 * x + 21]! ^ s[2 * x + 31]! ^ s[2 * x + 41]!;
    }
    for (let x = 0; x < 5; x++) {
      const l = (x + 4) % 5;
      const r = (x + 1) % 5;
      const rlo = c[2 * r]!;
      const rhi = c[2 * r + 1]!;
      const dlo = c[2 * l]! ^ ((rlo << 1) | (rhi >>> 31));
      const dhi = c[2 * l + 1]! ^ ((rhi << 1) | (rlo >>> 31));
      for (let y = 0; y < 25; y += 5) {
        s[2 * (x + y)] = s[2 * (x + y)]! ^ dlo;
        s[2 * (x + y) + 1] = s[2 * (x + y) + 1]! ^ dhi;
      }
    }
    // rho and pi: B[y, 2x + 3y] = rot(A[x, y], ROT[x, y])
    for (let x = 0; x < 5; x++) {
      for (let y = 0; y < 5; y++) {
        const i = x + 5 * y;
        const lo = s[2 * i]!;
        const hi = s[2 * i + 1]!;
        const n = ROT[i]!;
        let olo: number;
        let ohi: number;
        if (n === 0) {
          olo = lo;
          ohi = hi;
        } else if (n < 32) {
          olo = (lo << n) | (hi >>> (32 - n));
          ohi = (hi << n) | (lo >>> (32 - n));
        } else if (n === 32) {
          olo = hi;
          ohi = lo;
        } else {
          const m = n - 32;
          olo = (hi << m) | (lo >>> (32 - m));
          ohi = (lo << m) | (hi >>> (32 - m));
        }
        const j = y + 5 * ((2 * x + 3 * y) % 5);
        b[2 * j] = olo;
        b[2 * j + 1] = ohi;
      }
    }
    // chi
    for (let y = 0; y < 25; y += 5) {
      for (let x = 0; x < 5; x++) {
        const i = x + y;
        const i1 = ((x + 1) % 5) + y;
        const i2 = ((x + 2) % 5) + y;
        s[2 * i] = b[2 * i]! ^ (~b[2 * i1]! & b[2 * i2]!);
        s[2 * i + 1] = b[2 * i + 1]! ^ (~b[2 * i1 + 1]! & b[2 * i2 + 1]!);
      }
    }
    // iota
    s[0] = s[0]! ^ RC[2 * round]!;
    s[1] = s[1]! ^ RC[2 * round + 1]!;
  }
}

function absorbBlock(s: Uint32Array, block: Uint8Array): void {
  for (let i = 0; i < RATE; i += 4) {
    s[i >> 2] = s[i >> 2]! ^ (block[i]! | (block[i + 1]! << 8) | (block[i + 2]! << 16) | (block[i + 3]! << 24));
  }
  keccakF(s);
}

export function keccak256(data: Uint8Array): Buffer {
  const s = new Uint32Array(50);
  let off = 0;
  for (; off + RATE <= data.length; off += RATE) absorbBlock(s, data.subarray(off, off + RATE));
  const last = new Uint8Array(RATE);
  last.set(data.subarray(off));
  last[data.length - off] = last[data.length - off]! ^ 0x01;
  last[RATE - 1] = last[RATE - 1]! ^ 0x80;
  absorbBlock(s, last);
  const out = Buffer.alloc(32);
  for (let i = 0; i < 8; i++) out.writeUInt32LE(s[i]!, 4 * i);
  return out;
}
