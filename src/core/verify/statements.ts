/**
 * What each witness established for a subject, and what it did not, in plain sentences
 * for auditors (SPEC §6: trust is the caller's). Nostr shows who signed the envelope and
 * which relays the caller asked hold it; its `created_at` is the signer's own word. An
 * OpenTimestamps Bitcoin attestation shows the digest existed before a block, as far as
 * the caller trusts the header source. Pure: built from what the stages found.
 */
import type { NostrEventJson } from '../proof/format.js';
import { npub } from '../nostr/keys.js';
import type { OnlineOutcome } from './online.js';
import type { OtsWitnessReport, WitnessStatement, WitnessVerdict } from './types.js';

function isoSeconds(unixSeconds: number): string {
  const d = new Date(unixSeconds * 1000);
  return Number.isNaN(d.getTime()) ? String(unixSeconds) : d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function signerName(pubkey: string): string {
  try {
    return `${npub(pubkey)} (${pubkey})`;
  } catch {
    return pubkey;
  }
}

export function nostrStatement(
  verified: WitnessVerdict,
  event: NostrEventJson | null,
  eventValid: boolean,
  mode: 'envelope' | 'batch',
  signerExpected: boolean | null,
  online: OnlineOutcome | null,
): WitnessStatement {
  if (!event || !eventValid || verified === 'failed') {
    return { established: [], not_established: [event && !eventValid ? 'anything: the event does not verify' : verified === 'failed' ? 'anything: a Nostr check failed' : 'anything: the proof carries no signed event yet'] };
  }
  const established: string[] = [];
  const notEstablished: string[] = [];
  established.push(mode === 'batch'
    ? `event ${event.id} is signed by ${signerName(event.pubkey)} and carries a batch root that the inclusion path leads to from d`
    : `event ${event.id} is signed by ${signerName(event.pubkey)} and carries this envelope, byte for byte`);
  if (signerExpected === true) established.push('the signer is a key you trust (--expected-pubkey)');
  else notEstablished.push('that the signer is anyone you trust (give --expected-pubkey or --trust-file)');
  if (!online) notEstablished.push('which relays hold it (offline: --online --relay URL asks relays you name)');
  else if (online.holders.length) {
    const copies = online.copyHolders ?? [];
    const exact = online.holders.filter((u) => !copies.includes(u));
    established.push([
      exact.length ? `the identical event is held by ${exact.join(', ')}` : '',
      copies.length ? `${exact.length ? 'a copy of it' : 'a copy of the event'} (same signer, kind, content and tags) by ${copies.join(', ')}` : '',
    ].filter(Boolean).join('; '));
  }
  else notEstablished.push('that any relay you asked holds it');
  notEstablished.push(`a time: created_at ${isoSeconds(event.created_at)} is the signer's own word, not a time proof`);
  return { established, not_established: notEstablished };
}

export function otsStatement(
  verified: WitnessVerdict,
  pending: readonly string[],
  blocks: OtsWitnessReport['bitcoin'],
  headerSource: string | null,
): WitnessStatement {
  const established: string[] = [];
  const notEstablished: string[] = [];
  if (verified === 'failed') return { established, not_established: ['anything: an OpenTimestamps check failed'] };
  for (const b of blocks) {
    if (b.verified) {
      const when = b.time !== null ? ` (block time ${isoSeconds(b.time)})` : '';
      established.push(`d existed before Bitcoin block ${b.height}${when}, as far as you trust ${headerSource ?? 'the header source'}`);
    } else {
      notEstablished.push(`the Bitcoin attestation at block ${b.height}: not checked against a header source you trust${headerSource ? ` (${headerSource} could not confirm it)` : ' (give --headers FILE, --esplora URL or --bitcoind URL)'}`);
    }
  }
  if (!blocks.some((b) => b.verified) && pending.length) {
    notEstablished.push(`a time: ${pending.length} calendar${pending.length > 1 ? 's hold' : ' holds'} it pending, a promise to commit it into Bitcoin, not a proof`);
  }
  if (established.length) notEstablished.push('who anchored it: a timestamp says when the digest existed, not who made it');
  else if (notEstablished.length === 0) notEstablished.push('anything: the .ots carries no attestation yet');
  return { established, not_established: notEstablished };
}
