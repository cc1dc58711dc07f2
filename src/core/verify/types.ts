/**
 * The verifier's vocabulary: stable check names in report order, their outcomes, and
 * the facts one stage hands to the next. Nothing here does I/O.
 */
import type { RecognizedDocument } from '../aer1/document.js';
import type { Envelope, SubjectKind } from '../envelope/envelope.js';
import type { AnchorProof, NostrEventJson, WitnessStatus } from '../proof/format.js';
import type { DetachedTimestampFile } from '../ots/codec.js';

/** SPEC §6 check names, in the order they are reported. `nostr-content` and `batch-path` exclude each other. */
export const CHECK_NAMES = [
  'input', 'recompute', 'envelope', 'digest', 'nostr-event', 'nostr-content', 'batch-path', 'signer',
  'ots-digest', 'ots-attestations', 'bitcoin', 'log', 'tsa', 'cosignatures', 'online', 'equivocation',
] as const;

export type CheckName = (typeof CHECK_NAMES)[number];

export type CheckStatus = 'PASS' | 'FAIL' | 'SKIP';

export interface CheckResult {
  readonly name: CheckName;
  readonly status: CheckStatus;
  /** One line, no newline. */
  readonly detail: string;
}

export const pass = (name: CheckName, detail: string): CheckResult => ({ name, status: 'PASS', detail });
export const fail = (name: CheckName, detail: string): CheckResult => ({ name, status: 'FAIL', detail });
export const skip = (name: CheckName, detail: string): CheckResult => ({ name, status: 'SKIP', detail });

/**
 * What the verifier itself concluded about one witness (never copied from the proof's
 * claim). `untrusted`: a valid Nostr event whose signer the caller did not name — it
 * shows that someone signed the envelope, never that the subject is anchored.
 */
export type WitnessVerdict = 'confirmed' | 'partial' | 'pending' | 'unverified' | 'untrusted' | 'failed' | 'absent';

/** In plain words, what a witness established for this subject and what it did not. */
export interface WitnessStatement {
  established: string[];
  not_established: string[];
}

export interface NostrWitnessReport {
  /** The status the proof claims (the daemon's view). */
  claimed: WitnessStatus | null;
  verified: WitnessVerdict;
  mode: 'envelope' | 'batch' | null;
  event_id: string | null;
  pubkey: string | null;
  npub: string | null;
  signer_expected: boolean | null;
  /** The proof's own relay list, as claimed. */
  relays: Array<{ url: string; status: string }>;
  /** Relays asked with --online that served the identical event. */
  held_by: string[];
  established: string[];
  not_established: string[];
}

export interface OtsWitnessReport {
  claimed: WitnessStatus | null;
  verified: WitnessVerdict;
  /** Calendar URIs of the pending attestations. */
  pending: string[];
  bitcoin: Array<{ height: number; block_hash: string | null; time: number | null; verified: boolean }>;
  /** The header source the caller gave (`headers file x.json`, `esplora https://…`), or null. */
  header_source: string | null;
  established: string[];
  not_established: string[];
}

/** One independent time for the subject: who says `d` (or the checkpoint holding it) existed when. */
export interface TimeEvidence {
  kind: 'tsa' | 'witness' | 'bitcoin';
  /** ISO 8601, whole seconds. */
  at: string;
  /** Who says so: the TSA certificate's subject, the witness's name, `Bitcoin block <height>`. */
  by: string;
  /** Where from: the TSA's URL, the witness's verifier key, the header source. */
  source: string | null;
  /** Vouched for by what the caller gave (--tsa-ca, --witness, the header source). */
  trusted: boolean;
  /** One sentence: "the checkpoint holding d (…) existed at T: …". */
  statement: string;
}

export interface WitnessReports {
  nostr: NostrWitnessReport | null;
  ots: OtsWitnessReport | null;
}

export interface SubjectReport {
  kind: SubjectKind | null;
  key: string | null;
  digest: string | null;
  anchored_at: string | null;
}

/** The input once the `input` stage has read it. */
export interface PreparedInput {
  /** Where the proof came from, for the `input` line. */
  readonly proofSource: 'attached' | 'given' | 'standalone';
  readonly proof: AnchorProof;
  /** The proof exactly as read, for the byte-level checks (the event's fresh parse). */
  readonly rawProof: Record<string, unknown>;
  /** The document, when one was given and recognized. */
  readonly document: RecognizedDocument | null;
  /** A job timeline whose last entry does not close it (only a truncated or altered one). */
  readonly openTimeline: boolean;
}

/** Facts passed down the pipeline; each stage reads what earlier stages found. */
export interface Facts {
  input: PreparedInput | null;
  /** Values recomputed from the document, to be compared with the envelope. */
  recomputed: RecomputedValues | null;
  envelope: Envelope | null;
  /** d = SHA-256 of the envelope's canonical bytes, as computed here (not the proof's word). */
  digest: Buffer | null;
  /** The envelope's canonical text (what an envelope-mode event carries). */
  envelopeText: string | null;
  event: NostrEventJson | null;
  eventValid: boolean;
  ots: DetachedTimestampFile | null;
  otsForDigest: boolean;
}

export type RecomputedValues =
  | {
    readonly kind: 'receipt';
    readonly receipt_uuid: string;
    readonly output_sha256: string;
  }
  | {
    readonly kind: 'workflow-close';
    readonly receipt_uuid: string;
    readonly output_sha256: string;
    readonly workflow_id: string;
    /** Recomputed when the construction is confirmed, else the declared root. */
    readonly merkle_root: string;
    readonly rootRecomputed: boolean;
    readonly merkle_version: string;
    readonly step_count: number;
  }
  | {
    readonly kind: 'chain-head';
    readonly job_id: string;
    readonly final_entry_digest: string;
    readonly entry_count: number;
  };
