/**
 * A trust file's text (`--trust-file FILE`, or a file dropped on /verify): one key per line,
 * 64 hex or npub1… for a Nostr signer, `<name>+<hash>+<base64>` for an anchor log's verifier
 * key; blank lines and `#` comments ignored. The CLI reads the file; this parses.
 */
import { UsageError } from '../errors/errors.js';
import { parseVerifierKey, type VerifierKey } from '../log/note.js';
import { parseExpectedPubkey } from './nostr.js';

export interface TrustedKeys {
  /** Nostr signers (hex, lowercase). */
  readonly pubkeys: string[];
  /** Anchor log verifier keys. */
  readonly logKeys: VerifierKey[];
}

/** Every key a trust file names; a bad line or a file naming none is a UsageError naming the file and line. */
export function parseTrustKeys(text: string, file: string): TrustedKeys {
  const out: TrustedKeys = { pubkeys: [], logKeys: [] };
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/#.*$/, '').trim();
    if (line === '') continue;
    try {
      // a log verifier key is the only kind with '+' (hex and bech32 have none)
      if (line.includes('+')) out.logKeys.push(parseVerifierKey(line, 'log key'));
      else out.pubkeys.push(parseExpectedPubkey(line));
    } catch (err) {
      throw new UsageError(`trust file ${file} line ${i + 1}: ${(err as Error).message.replace(/^--expected-pubkey /, '')}`);
    }
  }
  if (out.pubkeys.length + out.logKeys.length === 0) throw new UsageError(`trust file ${file} names no key`);
  return out;
}

/** The Nostr signers a trust file names (hex, lowercase); its log keys are read by parseTrustKeys. */
export function parseTrustText(text: string, file: string): string[] {
  return parseTrustKeys(text, file).pubkeys;
}
