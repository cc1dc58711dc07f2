/**
 * NIP-03 OpenTimestamps attestations for our own envelope events: kind 1040, tags
 * `["e", <event id>]` and `["k", "<its kind>"]`, content = the base64 `.ots` file whose
 * file digest is the event id and which holds one Bitcoin attestation. Pure.
 */
import { isHex64 } from '../aer1/hash.js';
import { InputError } from '../errors/errors.js';
import type { SignedEvent, SigningKey } from './keys.js';

export const NIP03_KIND = 1040;
export const NIP03_ALT = 'OpenTimestamps attestation of an AER-1 anchor event';

export interface Nip03Input {
  /** The attested event's id (hex). */
  eventId: string;
  /** The attested event's kind. */
  eventKind: number;
  /** The `.ots` file (file digest = the event id). */
  ots: Uint8Array;
  /** Unix seconds. */
  createdAt: number;
}

export function nip03Event(input: Nip03Input, key: SigningKey): SignedEvent {
  if (!isHex64(input.eventId)) throw new InputError('bad_event_input', 'must be 64 lowercase hex characters', 'eventId');
  if (!Number.isInteger(input.eventKind) || input.eventKind < 0 || input.eventKind > 65535) throw new InputError('bad_event_input', 'must be an integer in 0..65535', 'eventKind');
  if (!Number.isSafeInteger(input.createdAt) || input.createdAt < 0) throw new InputError('bad_event_input', 'must be unix seconds', 'createdAt');
  if (input.ots.length === 0) throw new InputError('bad_event_input', 'must be a non-empty .ots file', 'ots');
  return key.sign({
    kind: NIP03_KIND,
    created_at: input.createdAt,
    tags: [
      ['e', input.eventId],
      ['k', String(input.eventKind)],
      ['alt', NIP03_ALT],
    ],
    content: Buffer.from(input.ots).toString('base64'),
  });
}
