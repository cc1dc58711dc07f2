/**
 * The checks tlog-witness asks of a witness on `add-checkpoint`, in the spec's order, as a
 * pure function of the request, the log keys it trusts and what it last cosigned for the
 * origin. The caller persists `record` (when given) before answering: check and update
 * are one step under the origin's lock (src/dev/witness/witness-store.ts).
 */
import { InputError } from '../../core/errors/errors.js';
import { parseCheckpointText, type Checkpoint } from '../../core/log/checkpoint.js';
import { checkNote, parseNote, type VerifierKey } from '../../core/log/note.js';
import { verifyConsistency } from '../../core/log/proof.js';
import { EMPTY_ROOT } from '../../core/log/rfc6962.js';
import { parseAddCheckpointRequest } from '../../core/witness/add-checkpoint.js';

/** What the witness checks against per origin: the latest cosigned size and root hash. */
export interface OriginRecord {
  readonly size: number;
  readonly root: Buffer;
}

export type Decision =
  /** `note`: the checkpoint with the trusted log signatures only. */
  | { readonly status: 200; readonly checkpoint: Checkpoint; readonly noteText: string; readonly note: string }
  | { readonly status: 409; readonly knownSize: number; readonly reason: string }
  | { readonly status: 400 | 403 | 404 | 422; readonly reason: string; readonly origin?: string };

/** The origin line of a request body (to pick its lock) or null when there is none to read. */
export function requestOrigin(body: Buffer): string | null {
  const blank = body.indexOf('\n\n');
  if (blank < 0) return null;
  const end = body.indexOf('\n', blank + 2);
  return end < 0 ? null : body.subarray(blank + 2, end).toString('utf8');
}

export function decideAddCheckpoint(body: Buffer, logKeys: ReadonlyMap<string, readonly VerifierKey[]>, known: (origin: string) => OriginRecord | null): Decision {
  let req: ReturnType<typeof parseAddCheckpointRequest>;
  let text: string;
  let checkpoint: Checkpoint;
  let parsedNote: ReturnType<typeof parseNote>;
  try {
    req = parseAddCheckpointRequest(body);
    parsedNote = parseNote(req.note, 'checkpoint');
    text = parsedNote.text;
    checkpoint = parseCheckpointText(text, 'checkpoint');
  } catch (err) {
    if (err instanceof InputError) return { status: 400, reason: err.message };
    throw err;
  }
  const origin = checkpoint.origin;
  const keys = logKeys.get(origin);
  if (keys === undefined) return { status: 404, reason: `unknown origin ${JSON.stringify(origin)}`, origin };
  const signed = checkNote(parsedNote, keys);
  if (!signed.ok) return { status: 403, reason: signed.message, origin };
  if (req.oldSize > checkpoint.size) return { status: 400, reason: `old size ${req.oldSize} is larger than the checkpoint's ${checkpoint.size}`, origin };
  const record = known(origin);
  const knownSize = record?.size ?? 0;
  if (req.oldSize !== knownSize) return { status: 409, knownSize, reason: `old size ${req.oldSize}, but the latest cosigned size is ${knownSize}` };
  if (checkpoint.size === 0 && !checkpoint.root.equals(EMPTY_ROOT)) return { status: 422, reason: 'a checkpoint of size 0 has the empty tree\'s root', origin };
  if (req.oldSize === 0) {
    if (req.proof.length > 0) return { status: 422, reason: 'old size 0 takes an empty proof', origin };
  } else if (req.oldSize === checkpoint.size) {
    if (!checkpoint.root.equals(record!.root)) return { status: 422, reason: `size ${checkpoint.size} was cosigned with another root hash (a fork)`, origin };
    if (req.proof.length > 0) return { status: 422, reason: 'equal sizes take an empty proof', origin };
  } else if (!verifyConsistency(req.oldSize, checkpoint.size, record!.root, checkpoint.root, req.proof)) {
    return { status: 422, reason: `the consistency proof from ${req.oldSize} to ${checkpoint.size} does not verify against the cosigned root`, origin };
  }
  // kept and served with the log signatures it verified only, not whatever else came along
  const logLines = parsedNote.signatures
    .filter((sig) => signed.signedBy.some((k) => k.name === sig.name && k.keyId === sig.keyId))
    .map((sig) => {
      const id = Buffer.alloc(4);
      id.writeUInt32BE(sig.keyId, 0);
      return `\u2014 ${sig.name} ${Buffer.concat([id, sig.signature]).toString('base64')}\n`;
    });
  return { status: 200, checkpoint, noteText: text, note: `${text}\n${logLines.join('')}` };
}
