/**
 * NIP-13 proof of work, pure and synchronous, in slices: difficulty is the number of
 * leading zero bits of the event id, committed to by a `["nonce", "<n>", "<target>"]` tag.
 *
 * Unlike nostr-tools' `minePow` (which runs to the end in one go and moves `created_at` to
 * the clock), a `PowMiner` keeps the event's `created_at` and searches nonces from 0 in
 * slices of a bounded number of hashes, so its caller can yield to the event loop between
 * slices and stop at a budget. Keeping `created_at` makes the mined id a pure function of
 * the event and the target: mining the same event again (after a crash) finds the same id,
 * and a relay that already holds it answers `duplicate:`.
 */
import { getPow } from 'nostr-tools/nip13';
import { sha256 } from '../aer1/hash.js';

export { getPow };

/** Highest difficulty anyone could ask (an id has 256 bits). */
export const MAX_POW_DIFFICULTY = 256;

export const NONCE_TAG = 'nonce';

/** What is mined: an event's fields that enter its id, without any nonce tag. */
export interface PowTemplate {
  pubkey: string;
  created_at: number;
  kind: number;
  tags: string[][];
  content: string;
}

/** A mined event, unsigned: its id meets the target. */
export interface MinedEvent extends PowTemplate {
  id: string;
  /** Leading zero bits of `id` (at least the target). */
  difficulty: number;
  /** Hashes tried. */
  hashes: number;
}

/** The tags without any nonce tag (an event mined before, mined again at another target). */
export function withoutNonce(tags: readonly string[][]): string[][] {
  return tags.filter((t) => t[0] !== NONCE_TAG).map((t) => [...t]);
}

/** The committed target of an event's nonce tag, or 0 when it has none (NIP-13: the third entry). */
export function committedTarget(tags: readonly string[][]): number {
  const tag = tags.find((t) => t[0] === NONCE_TAG);
  const n = tag && tag[2] !== undefined && /^[0-9]{1,3}$/.test(tag[2]) ? Number(tag[2]) : 0;
  return n <= MAX_POW_DIFFICULTY ? n : 0;
}

/**
 * Searches nonces 0, 1, 2, ... for an id with at least `target` leading zero bits.
 * `step(n)` tries up to n nonces and returns the mined event when found, else undefined.
 */
export class PowMiner {
  readonly target: number;
  #nonce = 0;
  readonly #head: string;
  readonly #tail: string;
  readonly #template: PowTemplate;

  constructor(template: PowTemplate, target: number) {
    if (!Number.isSafeInteger(target) || target < 0 || target > MAX_POW_DIFFICULTY) {
      throw new RangeError(`proof-of-work target must be an integer 0-${MAX_POW_DIFFICULTY}`);
    }
    this.target = target;
    const tags = withoutNonce(template.tags);
    this.#template = { pubkey: template.pubkey, created_at: template.created_at, kind: template.kind, tags, content: template.content };
    // The NIP-01 serialization [0,pubkey,created_at,kind,tags,content] around the nonce value:
    // only the decimal nonce changes between tries.
    const lead = JSON.stringify([0, template.pubkey, template.created_at, template.kind]).slice(0, -1);
    const others = tags.map((t) => JSON.stringify(t)).join(',');
    this.#head = `${lead},[${others}${others ? ',' : ''}["${NONCE_TAG}","`;
    this.#tail = `","${target}"]],${JSON.stringify(template.content)}]`;
  }

  /** Nonces tried so far. */
  get hashes(): number {
    return this.#nonce;
  }

  step(maxHashes: number): MinedEvent | undefined {
    const end = this.#nonce + Math.max(1, Math.floor(maxHashes));
    while (this.#nonce < end) {
      const nonce = this.#nonce++;
      const digest = sha256(`${this.#head}${nonce}${this.#tail}`);
      const bits = leadingZeroBits(digest);
      if (bits >= this.target) {
        return {
          ...this.#template,
          tags: [...this.#template.tags, [NONCE_TAG, String(nonce), String(this.target)]],
          id: digest.toString('hex'),
          difficulty: bits,
          hashes: this.#nonce,
        };
      }
    }
    return undefined;
  }
}

function leadingZeroBits(bytes: Uint8Array): number {
  let bits = 0;
  for (const byte of bytes) {
    if (byte === 0) {
      bits += 8;
      continue;
    }
    return bits + Math.clz32(byte) - 24;
  }
  return bits;
}

/**
 * The difficulty a relay's `pow:` answer names ("pow: difficulty 20 required",
 * "pow: min difficulty is 28", "pow: 16 bits needed"), or undefined when it names none.
 * The first integer 1-256 after the prefix.
 */
export function powDifficultyNamed(message: string): number | undefined {
  const m = /^pow:\D{0,80}?(\d{1,3})(?!\d)/.exec(message);
  if (!m) return undefined;
  const n = Number(m[1]);
  return n >= 1 && n <= MAX_POW_DIFFICULTY ? n : undefined;
}
