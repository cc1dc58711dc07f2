/**
 * Proofs we write, read by python-opentimestamps (Debian's /usr/bin/python3) and by the
 * npm `opentimestamps` package as the same timestamp: same digest, same attestations,
 * byte-identical re-serialization. And files python writes, read and re-written by us
 * byte for byte. One python process per batch of files.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchTree } from '../../../src/core/batch/batch-tree.js';
import { type Attestation, bitcoinAttestation, pendingAttestation } from '../../../src/core/ots/attestations.js';
import { batchProofs, proofForSubject } from '../../../src/core/ots/batch-proof.js';
import { encodeEntry } from '../../../src/core/log/entry.js';
import { inclusionProof, treeHash } from '../../../src/core/log/proof.js';
import { leafHash, rootOfHashes } from '../../../src/core/log/rfc6962.js';
import { DetachedTimestampFile, parseDetached, serializeDetached } from '../../../src/core/ots/codec.js';
import { type Op, KECCAK256, HEXLIFY, REVERSE, RIPEMD160, SHA1, SHA256, append, prepend } from '../../../src/core/ots/ops.js';
import { Timestamp, allAttestations } from '../../../src/core/ots/timestamp.js';
import { listVectors, otsVectorsDir, sharedVectorsFor } from './vector-files.js';

const PYTHON = '/usr/bin/python3';
const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'python-ots.py');
const pythonHasOts = existsSync(PYTHON) && (() => {
  try {
    execFileSync(PYTHON, ['-c', 'import opentimestamps.core.timestamp'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

// The npm package's main field points at a missing file; its index.js is the entry.
const OTS = createRequire(import.meta.url)('opentimestamps/index.js') as OtsJs;

interface OtsJs {
  DetachedTimestampFile: { deserialize(bytes: Uint8Array): JsDetached };
}
interface JsDetached {
  fileDigest(): number[] | Uint8Array;
  serializeToBytes(): number[] | Uint8Array;
  fileHashOp: { _TAG_NAME(): string };
  timestamp: JsTimestamp;
}
interface JsTimestamp {
  msg: number[] | Uint8Array;
  attestations: Array<{ constructor: { name: string }; uri?: string; height?: number; payload?: number[] | Uint8Array; _TAG?: () => number[] | Uint8Array }>;
  ops: Map<unknown, JsTimestamp>;
}

type Described = [string, string | number, string];

function describeOurs(file: DetachedTimestampFile): Described[] {
  return sortDescribed(
    allAttestations(file.timestamp).map(({ msg, attestation: a }): Described => {
      const hex = msg.toString('hex');
      switch (a.kind) {
        case 'pending':
          return ['pending', a.uri, hex];
        case 'bitcoin':
        case 'litecoin':
          return [a.kind, a.height, hex];
        case 'unknown':
          return ['unknown', `${a.tag.toString('hex')}:${a.payload.toString('hex')}`, hex];
      }
    }),
  );
}

function sortDescribed(list: Described[]): Described[] {
  return list.map((d) => JSON.stringify(d)).sort().map((s) => JSON.parse(s) as Described);
}

function describeJs(ts: JsTimestamp): Described[] {
  const out: Described[] = [];
  const stack: JsTimestamp[] = [ts];
  for (let node = stack.pop(); node; node = stack.pop()) {
    const hex = Buffer.from(node.msg).toString('hex');
    for (const a of node.attestations) {
      const name = a.constructor.name;
      if (name === 'PendingAttestation') out.push(['pending', a.uri!, hex]);
      else if (name === 'BitcoinBlockHeaderAttestation') out.push(['bitcoin', a.height!, hex]);
      else if (name === 'LitecoinBlockHeaderAttestation') out.push(['litecoin', a.height!, hex]);
      else out.push(['unknown', `${Buffer.from(a._TAG!()).toString('hex')}:${Buffer.from(a.payload!).toString('hex')}`, hex]);
    }
    for (const child of node.ops.values()) stack.push(child);
  }
  return sortDescribed(out);
}

interface PythonReading {
  file: string;
  ok: boolean;
  error?: string;
  roundtrip?: boolean;
  hash_op?: string;
  digest?: string;
  attestations?: Described[];
}

function pythonRead(files: string[]): Map<string, PythonReading> {
  const out = execFileSync(PYTHON, [SCRIPT, 'read', '-'], { input: files.join('\n'), maxBuffer: 256 << 20 }).toString('utf8');
  const readings = out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as PythonReading);
  return new Map(readings.map((r) => [r.file, r]));
}

/** A calendar-like answer (WITNESS-FACTS): nonce, sha256, tree path, time, HMAC, pending. */
function calendarAnswer(root: Buffer, uri: string): Timestamp {
  const ts = new Timestamp(root);
  ts.addOp(append(randomBytes(16)))
    .addOp(SHA256)
    .addOp(prepend(randomBytes(32)))
    .addOp(SHA256)
    .addOp(append(randomBytes(32)))
    .addOp(SHA256)
    .addOp(prepend(Buffer.from('5c3a1f00', 'hex')))
    .addOp(append(randomBytes(8)))
    .addAttestation(pendingAttestation(uri));
  return ts;
}

/** A root timestamp as the daemon keeps it: two calendars merged; optionally upgraded into a block. */
function rootTimestamp(root: Buffer, upgraded: boolean): Timestamp {
  const ts = new Timestamp(root);
  ts.merge(calendarAnswer(root, 'https://alice.calendar.example.org'));
  ts.merge(calendarAnswer(root, 'https://bob.calendar.example.org'));
  if (upgraded) {
    // Under alice's commitment: path to a transaction, txid, block merkle path, Bitcoin attestation.
    let node = ts.ops[0]!.timestamp;
    while (node.ops.length > 0) node = node.ops[0]!.timestamp;
    let up = node.addOp(SHA256).addOp(prepend(randomBytes(60))).addOp(append(randomBytes(40))).addOp(SHA256).addOp(SHA256);
    for (let i = 0; i < 11; i++) up = up.addOp(i % 2 ? prepend(randomBytes(32)) : append(randomBytes(32))).addOp(SHA256).addOp(SHA256);
    up.addAttestation(bitcoinAttestation(850_000 + Math.floor(Math.random() * 1000)));
  }
  return ts;
}

/** A seeded PRNG (mulberry32) so a failing random tree can be rebuilt. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A random tree with branches added in random order (our writer must sort as python does). */
function randomTree(seed: number): DetachedTimestampFile {
  const r = rng(seed);
  const int = (n: number): number => Math.floor(r() * n);
  const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => int(256)));
  const root = new Timestamp(bytes(32));
  const stack: Array<[Timestamp, number]> = [[root, 0]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [node, depth] = item;
    const branches: Array<Attestation | Op> = [];
    const nAtt = int(3);
    const nOps = depth >= 5 ? 0 : int(4);
    for (let i = 0; i < nAtt; i++) {
      const k = int(4);
      branches.push(
        k === 0
          ? pendingAttestation(`https://cal${int(10)}.example.org/x`)
          : k === 1
            ? bitcoinAttestation(int(2 ** 40))
            : k === 2
              ? { kind: 'litecoin', height: int(300) }
              : { kind: 'unknown', tag: bytes(8), payload: bytes(int(41)) },
      );
    }
    for (let i = 0; i < nOps; i++) {
      const k = int(8);
      branches.push(
        k === 0
          ? append(bytes(1 + int(3)))
          : k === 1
            ? prepend(bytes(1 + int(3)))
            : k === 2
              ? SHA1
              : k === 3
                ? RIPEMD160
                : k === 4
                  ? KECCAK256
                  : k === 5
                    ? REVERSE
                    : k === 6 && node.msg.length <= 256
                      ? HEXLIFY
                      : SHA256,
      );
    }
    if (branches.length === 0) branches.push(bitcoinAttestation(int(1000)));
    for (const b of branches) {
      if ('uri' in b || 'height' in b || 'payload' in b) node.addAttestation(b as Attestation);
      else {
        const before = node.ops.length;
        const child = node.addOp(b as Op);
        if (node.ops.length > before) stack.push([child, depth + 1]);
      }
    }
  }
  return new DetachedTimestampFile('sha256', root);
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ots-cross-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('the reference readers are available', () => {
  it('python-opentimestamps answers from /usr/bin/python3', () => {
    expect(pythonHasOts, 'install python3-opentimestamps (apt) so /usr/bin/python3 can import opentimestamps').toBe(true);
  });
});

describe.runIf(pythonHasOts)('batch proofs we write, read by python-opentimestamps and npm opentimestamps', () => {
  for (const upgraded of [false, true]) {
    it(`agree on every proof of batches of 1, 2, 3, 7 and 1000 subjects (${upgraded ? 'pending + Bitcoin' : 'pending only'})`, () => {
      const written: Array<{ file: string; bytes: Buffer; ours: Described[]; digest: string }> = [];
      for (const n of [1, 2, 3, 7, 1000]) {
        const ds = Array.from({ length: n }, (_, i) => createHash('sha256').update(`subject ${n}/${i} ${upgraded}`).digest());
        const root = rootTimestamp(new BatchTree(ds).root, upgraded);
        batchProofs(ds, root).forEach((proof, i) => {
          const bytes = serializeDetached(proof);
          const file = path.join(dir, `batch-${upgraded ? 'btc' : 'pending'}-${n}-${i}.ots`);
          writeFileSync(file, bytes);
          written.push({ file, bytes, ours: describeOurs(proof), digest: ds[i]!.toString('hex') });
        });
      }
      expect(written).toHaveLength(1013);
      const python = pythonRead(written.map((w) => w.file));
      for (const w of written) {
        const py = python.get(w.file)!;
        expect(py, w.file).toBeDefined();
        expect(py.ok, `${w.file}: ${py.error}`).toBe(true);
        expect(py.roundtrip, w.file).toBe(true);
        expect(py.hash_op).toBe('sha256');
        expect(py.digest).toBe(w.digest);
        expect(py.attestations).toEqual(w.ours);
        expect(w.ours.filter((a) => a[0] === 'pending')).toHaveLength(2);
        expect(w.ours.filter((a) => a[0] === 'bitcoin')).toHaveLength(upgraded ? 1 : 0);

        const js = OTS.DetachedTimestampFile.deserialize(w.bytes);
        expect(Buffer.from(js.serializeToBytes()).equals(w.bytes), w.file).toBe(true);
        expect(Buffer.from(js.fileDigest()).toString('hex')).toBe(w.digest);
        expect(js.fileHashOp._TAG_NAME()).toBe('sha256');
        expect(describeJs(js.timestamp)).toEqual(w.ours);
      }
    });
  }
});

describe.runIf(pythonHasOts)('anchor log proofs (docs/log.md): from d through the subject\'s log entry and inclusion path to a checkpoint root', () => {
  it('python-opentimestamps and npm opentimestamps read each with file digest d and reach the root the calendars hold', () => {
    const n = 300;
    const entries = Array.from({ length: n }, (_, i) => ({ digest: createHash('sha256').update(`log subject ${i}`).digest(), kind: (['receipt', 'workflow_close', 'job_timeline'] as const)[i % 3]!, key: `subject-${i}-ключ` }));
    const leaves = entries.map((e) => leafHash(encodeEntry(e)));
    const hashes = { hashAt: (h: number, i: number) => rootOfHashes(leaves.slice(i * 2 ** h, (i + 1) * 2 ** h)) };
    const written: Array<{ file: string; bytes: Buffer; ours: Described[]; digest: string }> = [];
    for (const size of [1, 7, 256, 300]) {
      const root = rootTimestamp(Buffer.from(treeHash(size, hashes)), size === 300);
      for (const i of new Set([0, Math.floor(size / 2), size - 1])) {
        const e = entries[i]!;
        const proof = proofForSubject(e.digest, i, size, inclusionProof(size, i, hashes), root, encodeEntry(e).subarray(32));
        const bytes = serializeDetached(proof);
        const file = path.join(dir, `log-${size}-${i}.ots`);
        writeFileSync(file, bytes);
        written.push({ file, bytes, ours: describeOurs(proof), digest: e.digest.toString('hex') });
      }
    }
    const python = pythonRead(written.map((w) => w.file));
    for (const w of written) {
      const py = python.get(w.file)!;
      expect(py.ok, `${w.file}: ${py.error}`).toBe(true);
      expect(py.roundtrip, w.file).toBe(true);
      expect(py.digest).toBe(w.digest);
      // the same attestations on the same messages: python ran our ops from d to the calendars' commitments
      expect(py.attestations).toEqual(w.ours);
      const js = OTS.DetachedTimestampFile.deserialize(w.bytes);
      expect(Buffer.from(js.serializeToBytes()).equals(w.bytes), w.file).toBe(true);
      expect(Buffer.from(js.fileDigest()).toString('hex')).toBe(w.digest);
      expect(describeJs(js.timestamp)).toEqual(w.ours);
    }
  });
});

describe.runIf(pythonHasOts)('random trees', () => {
  it('that we build in random insertion order are written in python-opentimestamps order', () => {
    const written = Array.from({ length: 300 }, (_, seed) => {
      const file = path.join(dir, `ours-${seed}.ots`);
      const proof = randomTree(seed);
      const bytes = serializeDetached(proof);
      writeFileSync(file, bytes);
      return { file, ours: describeOurs(proof), seed };
    });
    const python = pythonRead(written.map((w) => w.file));
    for (const w of written) {
      const py = python.get(w.file)!;
      expect(py.ok, `seed ${w.seed}: ${py.error}`).toBe(true);
      expect(py.roundtrip, `seed ${w.seed}: python re-serializes differently`).toBe(true);
      expect(py.attestations, `seed ${w.seed}`).toEqual(w.ours);
    }
  });

  it('that python writes are read and re-written by us byte for byte, with the same attestations', () => {
    const pyDir = mkdtempSync(path.join(dir, 'py-'));
    execFileSync(PYTHON, [SCRIPT, 'write', pyDir, '300', '42']);
    const files = readdirSync(pyDir).map((f) => path.join(pyDir, f));
    expect(files).toHaveLength(300);
    const python = pythonRead(files);
    for (const file of files) {
      const bytes = readFileSync(file);
      const ours = parseDetached(bytes);
      expect(serializeDetached(ours).equals(bytes), file).toBe(true);
      expect(describeOurs(ours)).toEqual(python.get(file)!.attestations);
    }
  });
});

describe.runIf(pythonHasOts && sharedVectorsFor('reading the shared .ots vectors with python-opentimestamps and npm opentimestamps'))('the shared vectors', () => {
  it('read the same in python, npm opentimestamps and ours; refused by all three when invalid', () => {
    const { valid, invalid } = listVectors();
    const files = [...valid, ...invalid].map((f) => path.join(otsVectorsDir, f));
    const python = pythonRead(files);
    for (const name of valid) {
      const file = path.join(otsVectorsDir, name);
      const bytes = readFileSync(file);
      const ours = parseDetached(bytes);
      const py = python.get(file)!;
      expect(py.ok && py.roundtrip, name).toBe(true);
      expect(py.digest).toBe(ours.digest.toString('hex'));
      expect(py.attestations).toEqual(describeOurs(ours));
      const js = OTS.DetachedTimestampFile.deserialize(bytes);
      expect(describeJs(js.timestamp), name).toEqual(describeOurs(ours));
    }
    for (const name of invalid) {
      expect(python.get(path.join(otsVectorsDir, name))!.ok, name).toBe(false);
      expect(() => parseDetached(readFileSync(path.join(otsVectorsDir, name))), name).toThrow();
    }
  });
});
