/**
 * The mutation sweep: a few hundred hostile variants of real proofs — the demo's (a real
 * daemon, dev relays and calendars), those built in test/verify/build-proofs.ts (envelope,
 * batch, with a relay copy, with nostr.mode), and the real `.ots` files of ../shared/vectors
 * (read in place, never copied; when the folder is absent one line says so and the rest
 * runs) — each run through the verifier with --require-confirmed and the genuine headers, so
 * PASS can only mean a confirmation. Every variant meant to break what is anchored must give
 * FAIL or a usage error (exit 2) with a bounded one-line reason: never PASS, never another
 * exception (a stack trace), never a slow answer. Seeded (settings.ts), bounded.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/core/errors/errors.js';
import { verifyAnchor, type VerifyOptions, type VerifyReport } from '../../src/core/verify/pipeline.js';
import { HeadersFileSource } from '../../src/adapters/bitcoin/sources.js';
import { DetachedTimestampFile, parseDetached, serializeDetached } from '../../src/core/ots/codec.js';
import { prunedTo } from '../../src/core/ots/event-tree.js';
import { PowMiner } from '../../src/core/nostr/pow.js';
import { loadFixture } from '../fixtures/index.js';
import { runDemo } from '../helpers/browser.js';
import { tempDir } from '../helpers/harness.js';
import { headersFile, readVector, sharedVectorsFor, listVectors } from '../witness/ots/vector-files.js';
import { KEY, attach, batchModeProofs, envelopeModeProof, receiptNumber, type Json } from '../verify/build-proofs.js';
import { SEED, fuzzParams } from './settings.js';

/** mulberry32: a small seeded PRNG, so every run builds the same variants. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
type Path = Array<string | number>;

function at(v: unknown, path: Path): unknown {
  let x = v;
  for (const p of path) x = (x as Record<string | number, unknown>)[p];
  return x;
}

function setAt(v: unknown, path: Path, value: unknown): void {
  (at(v, path.slice(0, -1)) as Record<string | number, unknown>)[path[path.length - 1]!] = value;
}

function leaves(v: unknown, base: Path = [], out: Path[] = []): Path[] {
  out.push(base);
  if (Array.isArray(v)) v.forEach((x, i) => leaves(x, [...base, i], out));
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) leaves(x, [...base, k], out);
  return out;
}

/** Latin letters and their Cyrillic/Greek lookalikes. */
const LOOKALIKE: Record<string, string> = { a: '\u0430', e: '\u0435', o: '\u043e', c: '\u0441', p: '\u0440', i: '\u0456', s: '\u0455', x: '\u0445', y: '\u0443', n: '\u0578', r: '\u0433', t: '\u03c4', d: '\u0501', v: '\u03bd' };

function lookalike(s: string, r: () => number): string {
  const idx = [...s].map((c, i) => (LOOKALIKE[c] ? i : -1)).filter((i) => i >= 0);
  if (idx.length === 0) return `${s}\u200b`;
  const i = idx[Math.floor(r() * idx.length)]!;
  return s.slice(0, i) + LOOKALIKE[s[i]!]! + s.slice(i + 1);
}

interface Base {
  name: string;
  /** The document with its proof attached, or a bare proof. */
  value: Json;
  /** Where the proof sits in `value` ([] for a bare proof). */
  proofAt: Path;
  opts: () => VerifyOptions;
}

interface Variant {
  base: string;
  what: string;
  value: unknown;
  opts: () => VerifyOptions;
}

interface Outcome {
  verdict: 'PASS' | 'FAIL' | 'INCONCLUSIVE' | 'EXIT2';
  line: string;
  ms: number;
  /** A check line past MAX_REASON characters, or with a line break. */
  unbounded?: boolean;
}

/** Runs one variant; anything thrown but a UsageError is what would reach the user as a stack trace. */
async function judge(v: Variant): Promise<Outcome> {
  const t0 = performance.now();
  let report: VerifyReport;
  try {
    report = await verifyAnchor({ value: v.value }, { ...v.opts(), requireConfirmed: true });
  } catch (err) {
    if (err instanceof UsageError) return { verdict: 'EXIT2', line: err.message, ms: performance.now() - t0 };
    throw new Error(`${v.base} / ${v.what}: not a verdict but ${(err as Error).stack ?? String(err)}`);
  }
  // every check line is printed too: each bounded, one line
  const longest = report.checks.reduce((a, c) => (c.detail.length > a.detail.length ? c : a), report.checks[0]!);
  if (longest.detail.length > MAX_REASON || report.checks.some((c) => /[\n\r]/.test(c.detail))) {
    return { verdict: report.verdict, line: `${longest.name} line of ${longest.detail.length} characters: ${longest.detail.slice(0, 200)}`, ms: performance.now() - t0, unbounded: true };
  }
  return { verdict: report.verdict, line: report.reason, ms: performance.now() - t0 };
}

const MAX_REASON = 2000;

/** A copy of the .ots in a proof pruned to its one Bitcoin path (every byte then matters). */
function prunedOts(b64: string, height: number): string {
  const file = parseDetached(Buffer.from(b64, 'base64'));
  const pruned = prunedTo(file.timestamp, (a) => a.kind === 'bitcoin' && a.height === height);
  if (!pruned) throw new Error('no Bitcoin attestation to keep');
  return serializeDetached(new DetachedTimestampFile(file.hashOp, pruned)).toString('base64');
}

function withPrunedOts(base: Base): Base {
  const value = clone(base.value);
  const proof = at(value, base.proofAt) as Json;
  const ots = proof.ots as Json;
  ots.proof = prunedOts(ots.proof as string, (ots.bitcoin as Json).height as number);
  return { ...base, name: `${base.name} (.ots pruned to its Bitcoin path)`, value };
}

const out = tempDir('aer1-hostile-variants');
let bases: Base[] = [];

beforeAll(() => {
  const demoOut = join(out, 'demo');
  const demo = runDemo(demoOut);
  const headers = join(demoOut, 'headers.json');
  const demoOpts = (): VerifyOptions => ({ headerSource: new HeadersFileSource(headers), network: 'regtest', expectedPubkeys: [demo.signer.pubkey] });
  const demoDoc = (f: string): Json => JSON.parse(readFileSync(join(demoOut, f), 'utf8')) as Json;

  const HEIGHT = 611;
  const receipt = receiptNumber(1201);
  const env = envelopeModeProof(receipt, { mineAt: HEIGHT });
  const docs = [receiptNumber(1202), receiptNumber(1203), receiptNumber(1204)];
  const batch = batchModeProofs(docs, { mineAt: HEIGHT + 1 });
  const chain = loadFixture<{ entries: Json[] }>('aer1-chain-v07');
  const chainProof = envelopeModeProof({ entries: chain.entries }, { mineAt: HEIGHT + 2 });
  const map = new Map<number, Buffer>();
  for (const b of [env.block, batch.block, chainProof.block]) map.set(b!.height, b!.header);
  const builtOpts = (): VerifyOptions => ({ headerSource: new HeadersFileSource(map), network: 'regtest', expectedPubkeys: [KEY.publicKey] });

  // a relay copy (NIP-13 mined) on the first relay, and nostr.mode stated
  const withCopy = clone(env.proof);
  const miner = new PowMiner(env.event!, 6);
  let mined;
  for (let i = 0; i < 1000 && !mined; i++) mined = miner.step(1000);
  const copy = KEY.sign({ kind: mined!.kind, created_at: mined!.created_at, tags: mined!.tags, content: mined!.content });
  ((withCopy.nostr as Json).relays as Json[])[0]!.event = copy;
  (withCopy.nostr as Json).mode = 'envelope';
  const batchWithMode = clone(batch.proofs[1]!);
  (batchWithMode.nostr as Json).mode = 'batch';

  bases = [
    { name: 'demo receipt', value: demoDoc('receipt.json'), proofAt: ['anchor_proof'], opts: demoOpts },
    { name: 'demo workflow', value: demoDoc('workflow.json'), proofAt: ['anchor_proof'], opts: demoOpts },
    { name: 'demo timeline', value: demoDoc('timeline.json'), proofAt: ['anchor_proof'], opts: demoOpts },
    { name: 'envelope receipt with a relay copy and mode', value: attach(receipt, withCopy), proofAt: ['anchor_proof'], opts: builtOpts },
    { name: 'batch-mode receipt with mode', value: attach(docs[1], batchWithMode), proofAt: ['anchor_proof'], opts: builtOpts },
    { name: 'job timeline', value: attach({ entries: chain.entries }, chainProof.proof), proofAt: ['anchor_proof'], opts: builtOpts },
    { name: 'bare proof', value: withCopy, proofAt: [], opts: builtOpts },
  ];
  bases = [...bases, ...bases.slice(0, 4).map(withPrunedOts)];
}, 120_000);

afterAll(() => rmSync(out, { recursive: true, force: true }));

/** Variants meant to break what is anchored: each must FAIL or exit 2. */
function breaking(base: Base, r: () => number, count: number): Variant[] {
  const proof = at(base.value, base.proofAt) as Json;
  const p = (sub: Path): Path => [...base.proofAt, ...sub];
  // the members a proof binds: change any and the anchor is another (or none)
  const bound = leaves(proof).filter((path) => {
    const [top, second] = path;
    if (top === 'envelope' || top === 'digest' || top === 'version') return true;
    if (top === 'nostr') return second === 'event' || second === 'batch' || second === 'mode' || (second === 'relays' && path[3] === 'event' && path.length > 4);
    if (top === 'ots') return second === 'proof' || (second === 'bitcoin' && path[2] !== 'time');
    return false;
  }).filter((path) => path.length > 0);

  const variants: Variant[] = [];
  const add = (what: string, mutate: (v: Json) => void): void => {
    const value = clone(base.value);
    mutate(value);
    variants.push({ base: base.name, what, value, opts: base.opts });
  };
  const ops = ['type', 'numberAsString', 'duplicate', 'swap', 'huge', 'deep', 'lookalikeValue', 'lookalikeKey', 'editString', 'drop'] as const;
  for (let i = 0; i < count; i++) {
    const path = bound[Math.floor(r() * bound.length)]!;
    const op = ops[Math.floor(r() * ops.length)]!;
    const cur = at(proof, path);
    const full = p(path);
    const name = `${op} at ${path.join('.')}`;
    switch (op) {
      case 'type': {
        const choices = [null, 0, -1, 1.5, '', 'x', [], {}, true, 2 ** 53];
        const pick = choices[Math.floor(r() * choices.length)];
        if (JSON.stringify(pick) === JSON.stringify(cur)) continue;
        add(`${name} -> ${JSON.stringify(pick)}`, (v) => setAt(v, full, pick));
        break;
      }
      case 'numberAsString':
        if (typeof cur === 'number') add(name, (v) => setAt(v, full, String(cur)));
        else if (typeof cur === 'string' && /^\d+$/.test(cur) && cur.length < 16) add(`${name} (string as number)`, (v) => setAt(v, full, Number(cur)));
        break;
      case 'duplicate':
        if (Array.isArray(cur) && cur.length > 0) add(name, (v) => (at(v, full) as unknown[]).push(clone(cur[Math.floor(r() * cur.length)])));
        break;
      case 'swap': {
        const parent = at(proof, path.slice(0, -1));
        if (parent && typeof parent === 'object') {
          const keys = Object.keys(parent).filter((k) => k !== String(path[path.length - 1]));
          const other = keys[Math.floor(r() * keys.length)];
          const a = (parent as Record<string, unknown>)[String(path[path.length - 1])];
          const b = other === undefined ? undefined : (parent as Record<string, unknown>)[other];
          if (other !== undefined && JSON.stringify(a) !== JSON.stringify(b)) {
            add(`${name} <-> ${other}`, (v) => {
              const pp = at(v, full.slice(0, -1)) as Record<string, unknown>;
              pp[String(path[path.length - 1])] = b;
              pp[other] = a;
            });
          }
        }
        break;
      }
      case 'huge':
        add(name, (v) => setAt(v, full, typeof cur === 'number' ? [1e308, -1e308, 2 ** 64, -0.5][Math.floor(r() * 4)] : 'A'.repeat(200_000 + Math.floor(r() * 1000))));
        break;
      case 'deep': {
        let deep: unknown = 'x';
        for (let d = 0; d < 80 + Math.floor(r() * 400); d++) deep = r() < 0.5 ? [deep] : { k: deep };
        add(name, (v) => setAt(v, full, deep));
        break;
      }
      case 'lookalikeValue':
        if (typeof cur === 'string' && cur.length > 0) add(name, (v) => setAt(v, full, lookalike(cur, r)));
        break;
      case 'lookalikeKey': {
        const key = path[path.length - 1];
        if (typeof key === 'string') {
          add(name, (v) => {
            const pp = at(v, full.slice(0, -1)) as Record<string, unknown>;
            const val = pp[key];
            delete pp[key];
            pp[lookalike(key, r)] = val;
          });
        }
        break;
      }
      case 'editString':
        if (typeof cur === 'string' && cur.length > 0) {
          const j = Math.floor(r() * cur.length);
          const c = cur[j]!;
          const repl = /[0-9a-f]/.test(c) ? '0123456789abcdef'.replace(c, '')[Math.floor(r() * 15)]! : c === 'A' ? 'B' : 'A';
          add(`${name} [${j}]`, (v) => setAt(v, full, cur.slice(0, j) + repl + cur.slice(j + 1)));
        }
        break;
      case 'drop':
        add(name, (v) => {
          const pp = at(v, full.slice(0, -1)) as Record<string | number, unknown> | unknown[];
          if (Array.isArray(pp)) pp.splice(full[full.length - 1] as number, 1);
          else delete pp[full[full.length - 1]!];
        });
        break;
    }
  }
  // dropping (or renaming, which drops) a copy, nostr.mode (informative) or the ots.bitcoin
  // claim (the .ots is the evidence) is allowed
  return variants.filter((x) => !(x.what.startsWith('drop at nostr.relays') && /\.event$/.test(x.what)) && !/^(drop|lookalikeKey) at (ots\.bitcoin|nostr\.mode)$/.test(x.what));
}

/** Byte flips in the .ots of a proof pruned to its Bitcoin path. */
function otsFlips(base: Base, r: () => number, count: number): Variant[] {
  const proof = at(base.value, base.proofAt) as Json;
  const bytes = Buffer.from((proof.ots as Json).proof as string, 'base64');
  const variants: Variant[] = [];
  for (let i = 0; i < count; i++) {
    const pos = Math.floor(r() * bytes.length);
    const xor = 1 + Math.floor(r() * 255);
    const flipped = Buffer.from(bytes);
    flipped[pos] = flipped[pos]! ^ xor;
    const value = clone(base.value);
    ((at(value, base.proofAt) as Json).ots as Json).proof = flipped.toString('base64');
    variants.push({ base: base.name, what: `.ots byte ${pos} ^ 0x${xor.toString(16)} (of ${bytes.length})`, value, opts: base.opts });
  }
  return variants;
}

describe('hostile variants of real proofs', () => {
  it('every genuine base passes confirmed under --require-confirmed (so a variant\'s FAIL is the mutation\'s doing)', async () => {
    expect(bases.length).toBe(11);
    for (const b of bases) {
      const o = await judge({ base: b.name, what: 'genuine', value: b.value, opts: b.opts });
      expect(o, `${b.name}: ${o.line}`).toMatchObject({ verdict: 'PASS' });
    }
  });

  it('a few hundred breaking variants: FAIL or exit 2, one bounded line, never PASS, never a crash, never slow', async () => {
    const r = prng(SEED);
    const scale = fuzzParams(1).numRuns ?? 1;
    const variants: Variant[] = [];
    for (const b of bases) {
      variants.push(...breaking(b, r, 30 * scale));
      if (b.name.includes('pruned')) variants.push(...otsFlips(b, r, 25 * scale));
    }
    expect(variants.length).toBeGreaterThan(300);
    const tally = { PASS: 0, FAIL: 0, INCONCLUSIVE: 0, EXIT2: 0 };
    let slowest = 0;
    let longest = 0;
    const passed: string[] = [];
    const unbounded: string[] = [];
    for (const v of variants) {
      const o = await judge(v);
      tally[o.verdict]++;
      slowest = Math.max(slowest, o.ms);
      longest = Math.max(longest, o.line.length);
      if (o.verdict === 'PASS') passed.push(`${v.base} / ${v.what}: ${o.line}`);
      if (o.unbounded) unbounded.push(`${v.base} / ${v.what}: ${o.line}`);
      expect(o.line, `${v.base} / ${v.what}`).not.toMatch(/\n|\bat .*\.(ts|js):\d+/);
      expect(o.line.length, `${v.base} / ${v.what}`).toBeLessThanOrEqual(MAX_REASON);
      expect(o.ms, `${v.base} / ${v.what}`).toBeLessThan(5000);
    }
    console.log(`hostile variants: ${variants.length} (${JSON.stringify(tally)}), slowest ${slowest.toFixed(0)} ms, longest reason ${longest} characters, seed ${SEED}`);
    expect(passed).toEqual([]);
    expect(unbounded).toEqual([]);
  }, 120_000);

  it.runIf(sharedVectorsFor('the real .ots vectors, whole and byte-flipped, against the verifier (1 test)'))('the real .ots vectors (mainnet, Bitcoin-attested) never confirm a subject, whole or byte-flipped', async () => {
    const r = prng(SEED + 1);
    const { valid, invalid } = listVectors();
    const mainnet = (): VerifyOptions => ({ headerSource: new HeadersFileSource(headersFile), network: 'mainnet', expectedPubkeys: [KEY.publicKey] });
    const target = bases.find((b) => b.name === 'envelope receipt with a relay copy and mode')!;
    let n = 0;
    for (const name of [...valid, ...invalid]) {
      const bytes = readVector(name);
      const files = [bytes, ...Array.from({ length: 10 }, () => {
        const f = Buffer.from(bytes);
        const pos = Math.floor(r() * f.length);
        f[pos] = f[pos]! ^ (1 + Math.floor(r() * 255));
        return f;
      })];
      for (const f of files) {
        const value = clone(target.value);
        const proof = value.anchor_proof as Json;
        proof.ots = { ...(proof.ots as Json), proof: f.toString('base64'), bitcoin: undefined };
        const o = await judge({ base: name, what: 'vector as the subject\'s .ots', value: JSON.parse(JSON.stringify(value)) as Json, opts: mainnet });
        n++;
        expect(o.verdict, name).not.toBe('PASS');
        expect(o.line, name).not.toMatch(/\n/);
      }
    }
    expect(n).toBeGreaterThanOrEqual(60);
  }, 60_000);
});
