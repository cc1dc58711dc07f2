/**
 * A trust file's text (`--trust-file FILE`, or a file dropped on /verify): one key per line,
 * 64 hex or npub1…, blank lines and `#` comments ignored. The CLI reads the file; this parses.
 */
import { UsageError } from '../errors/errors.js';
import { parseExpectedPubkey } from './nostr.js';

/** The keys a trust file names (hex, lowercase); a bad line or a file naming none is a UsageError naming the file and line. */
export function parseTrustText(text: string, file: string): string[] {
  const keys: string[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/#.*$/, '').trim();
    if (line === '') continue;
    try {
      keys.push(parseExpectedPubkey(line));
    } catch (err) {
      throw new UsageError(`trust file ${file} line ${i + 1}: ${(err as Error).message.replace(/^--expected-pubkey /, '')}`);
    }
  }
  if (keys.length === 0) throw new UsageError(`trust file ${file} names no key`);
  return keys;
}
