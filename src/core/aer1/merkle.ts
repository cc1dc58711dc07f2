/**
 * Workflow Merkle constructions, one registry keyed by `merkle_version`
 * (draft-zambo-aer1 section 8.1). Only constructions whose bytes are pinned by a published
 * vector are `confirmed`; the verifier reports the others as "construction not confirmed".
 */
import { InputError } from '../errors/errors.js';
import { canonicalBytes } from './canonical-json.js';
import { sha256, sha256Pair } from './hash.js';

/** What a construction may read from one step. */
export interface MerkleLeafInput {
  readonly seq: number;
  readonly receiptId: string;
  /** The step's `receipt_hash`, bare lowercase hex, when the step has one. */
  readonly receiptHash: string | undefined;
  /** Path of the step in the document, for errors (`steps[2]`). */
  readonly field: string;
}

export interface MerkleConstruction {
  /** The `merkle_version` string that selects it. */
  readonly name: string;
  /** True when the leaf bytes are pinned by the draft and a published vector. */
  readonly confirmed: boolean;
  readonly summary: string;
  leaf(step: MerkleLeafInput): Buffer;
}

/** The construction a close without `merkle_version` uses. */
export const DEFAULT_MERKLE_VERSION = 'receipt-id-v0';

/** parent = SHA-256(left || right), no prefix byte (unlike the RFC 6962 batch tree). */
function parent(left: Uint8Array, right: Uint8Array): Buffer {
  return sha256Pair(left, right);
}

/**
 * The root over leaf hashes: pairs left to right, an odd node at any level is paired with
 * itself, a single leaf is the root. No leaves is an error (a close has at least one step).
 */
export function merkleRoot(leaves: readonly Uint8Array[]): Buffer {
  if (leaves.length === 0) throw new InputError('no_steps', 'a Merkle root needs at least one leaf', 'steps');
  let level: Uint8Array[] = [...leaves];
  while (level.length > 1) {
    const next: Uint8Array[] = [];
    for (let i = 0; i < level.length; i += 2) {
      const left = level[i]!;
      next.push(parent(left, level[i + 1] ?? left));
    }
    level = next;
  }
  return Buffer.from(level[0]!);
}

const receiptIdV0: MerkleConstruction = {
  name: 'receipt-id-v0',
  confirmed: true,
  summary: 'leaf = SHA-256(UTF-8 of receipt_id as written)',
  leaf: (step) => sha256(step.receiptId), // strings hash as UTF-8
};

/**
 * Our reading of seq-output-v1, not confirmed by a published vector: leaf = SHA-256 of the
 * canonical JSON `{"output_hash":"<bare lowercase hex of receipt_hash>","seq":<seq>}`.
 */
const seqOutputV1: MerkleConstruction = {
  name: 'seq-output-v1',
  confirmed: false,
  summary: 'leaf = SHA-256(canonical JSON {"output_hash": receipt_hash, "seq": seq}) (project reading, not confirmed)',
  leaf: (step) => {
    if (step.receiptHash === undefined) {
      throw new InputError('missing', 'required by merkle_version seq-output-v1 (the leaf binds the step output hash)', `${step.field}.receipt_hash`);
    }
    return sha256(canonicalBytes({ output_hash: step.receiptHash, seq: step.seq }));
  },
};

export const MERKLE_CONSTRUCTIONS: ReadonlyMap<string, MerkleConstruction> = new Map(
  [receiptIdV0, seqOutputV1].map((c) => [c.name, c]),
);

/** The construction for a declared `merkle_version` (absent → receipt-id-v0); undefined when unknown. */
export function merkleConstruction(version: string | undefined): MerkleConstruction | undefined {
  return MERKLE_CONSTRUCTIONS.get(version ?? DEFAULT_MERKLE_VERSION);
}

/** Root of `steps` under `construction`, as lowercase hex. */
export function constructionRoot(construction: MerkleConstruction, steps: readonly MerkleLeafInput[]): string {
  return merkleRoot(steps.map((s) => construction.leaf(s))).toString('hex');
}

/** receipt-id-v0 root of a list of receipt ids (no duplicate check: that is the workflow parser's job). */
export function receiptIdV0Root(receiptIds: readonly string[]): string {
  return merkleRoot(receiptIds.map((id) => sha256(id))).toString('hex');
}
