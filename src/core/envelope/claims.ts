/**
 * What a subject claims, before it is time-stamped into an envelope (SPEC section 3): one
 * member set per subject kind, checked strictly because bare fields and proofs come from
 * strangers.
 */
import { InputError } from '../errors/errors.js';
import { checkCount, checkHex64, checkLength, checkText, describeValue, isObject, type JsonObject } from '../aer1/fields.js';
import { resolveLimits, type DocumentLimits } from '../aer1/limits.js';
import { DEFAULT_MERKLE_VERSION } from '../aer1/merkle.js';
import { quoteBounded } from '../aer1/json-limits.js';

export const ENVELOPE_TYPE = 'zambo-receipt-anchor/1';

export type SubjectKind = 'receipt' | 'workflow-close' | 'chain-head';

export const SUBJECT_KINDS: readonly SubjectKind[] = ['receipt', 'workflow-close', 'chain-head'];

export interface ReceiptClaims {
  readonly subject: 'receipt';
  readonly receipt_uuid: string;
  readonly output_sha256: string;
  readonly evidence_sha256?: string;
  readonly evidence_byte_length?: number;
  readonly evidence_url?: string;
}

export interface WorkflowCloseClaims {
  readonly subject: 'workflow-close';
  readonly receipt_uuid: string;
  readonly output_sha256: string;
  readonly workflow_id: string;
  readonly merkle_root: string;
  readonly merkle_version: string;
  readonly step_count: number;
}

export interface ChainHeadClaims {
  readonly subject: 'chain-head';
  readonly job_id: string;
  readonly final_entry_digest: string;
  readonly entry_count: number;
}

/** The envelope's members minus `type` and `anchored_at`. */
export type SubjectClaims = ReceiptClaims | WorkflowCloseClaims | ChainHeadClaims;

/** Evidence members a receipt subject may carry. */
export interface Evidence {
  readonly evidence_sha256?: string;
  readonly evidence_byte_length?: number;
  readonly evidence_url?: string;
}

type Check = (value: unknown, field: string, limits: DocumentLimits) => unknown;

const text: Check = (v, f, l) => checkText(v, f, l.maxStringLength);
const hex: Check = (v, f) => checkHex64(v, f);
const count: Check = (v, f) => checkCount(v, f);
const length: Check = (v, f) => checkLength(v, f);
const url: Check = (v, f, l) => checkUrl(v, f, l);

/** Per subject: member → [check, required]. */
const MEMBERS: Record<SubjectKind, Record<string, [Check, boolean]>> = {
  receipt: {
    receipt_uuid: [text, true],
    output_sha256: [hex, true],
    evidence_sha256: [hex, false],
    evidence_byte_length: [length, false],
    evidence_url: [url, false],
  },
  'workflow-close': {
    receipt_uuid: [text, true],
    output_sha256: [hex, true],
    workflow_id: [text, true],
    merkle_root: [hex, true],
    merkle_version: [text, true],
    step_count: [count, true],
  },
  'chain-head': {
    job_id: [text, true],
    final_entry_digest: [hex, true],
    entry_count: [count, true],
  },
};

/** An absolute URL (it must parse as one), no whitespace, within `maxUrlLength`. */
export function checkUrl(value: unknown, field: string, limits: DocumentLimits): string {
  const s = checkText(value, field, limits.maxUrlLength, 'maxUrlLength');
  // Controls and spaces would be silently dropped or escaped by URL parsers: refuse them.
  if (/[\u0000-\u0020\u007f]/.test(s) || !URL.canParse(s)) throw new InputError('bad_url', 'expected an absolute URL', field);
  return s;
}

export interface ClaimsOptions {
  readonly limits?: Partial<DocumentLimits>;
  /** Members besides the claims that the caller handles itself (`type`, `anchored_at`). */
  readonly extraMembers?: readonly string[];
  /** Bare fields may leave out `merkle_version` (→ receipt-id-v0); an envelope may not. */
  readonly defaultMerkleVersion?: boolean;
}

/**
 * Strictly parses subject claims: `subject` names the kind, every member of that kind is
 * present with its type, and any other member is refused by name.
 */
export function parseClaims(value: unknown, options: ClaimsOptions = {}): SubjectClaims {
  const limits = resolveLimits(options.limits);
  if (!isObject(value)) throw new InputError('not_object', `expected an object, got ${describeValue(value)}`, '$');
  const obj: JsonObject = value;
  if (!('subject' in obj)) throw new InputError('missing', 'required member is missing', 'subject');
  const subject = obj.subject;
  if (typeof subject !== 'string' || !(SUBJECT_KINDS as readonly string[]).includes(subject)) {
    throw new InputError('bad_subject', `expected one of ${SUBJECT_KINDS.join(', ')}, got ${quoteBounded(subject)}`, 'subject');
  }
  const kind = subject as SubjectKind;
  const members = MEMBERS[kind];
  const extra = new Set(options.extraMembers ?? []);
  for (const key of Object.keys(obj)) {
    if (key !== 'subject' && !Object.hasOwn(members, key) && !extra.has(key)) {
      throw new InputError('unknown_member', `unknown member for subject ${kind}`, key);
    }
  }
  const out: Record<string, unknown> = { subject: kind };
  for (const [key, [check, required]] of Object.entries(members)) {
    if (!Object.hasOwn(obj, key) || obj[key] === undefined) {
      if (key === 'merkle_version' && options.defaultMerkleVersion) {
        out[key] = DEFAULT_MERKLE_VERSION;
        continue;
      }
      if (required) throw new InputError('missing', `required member is missing for subject ${kind}`, key);
      continue;
    }
    out[key] = check(obj[key], key, limits);
  }
  return out as unknown as SubjectClaims;
}
