import { describe, expect, it } from 'vitest';
import { getEventHash, verifyEvent } from 'nostr-tools/pure';
import { canonicalJson } from '../../../src/core/aer1/canonical-json.js';
import { sha256Hex } from '../../../src/core/aer1/hash.js';
import { InputError } from '../../../src/core/errors/errors.js';
import {
  DEFAULT_EVENT_KIND,
  subjectTagValue,
  batchContent,
  batchEvent,
  canonicalEventJson,
  envelopeEvent,
  sameSignedEvent,
  serializeEvent,
  verifySignedEvent,
} from '../../../src/core/nostr/events.js';
import { SigningKey } from '../../../src/core/nostr/keys.js';
import { TEST_SECRET_HEX, workflowEnvelope } from './fixtures.js';

const key = SigningKey.parse(TEST_SECRET_HEX);

describe('envelope event', () => {
  it('carries the canonical envelope as content, alt, x and indexed subject tags, the default kind and anchored_at as created_at', () => {
    const env = workflowEnvelope(1, '2025-06-01T12:00:00Z');
    const ev = envelopeEvent({ canonical: env.canonical, digestHex: env.digestHex }, key);
    expect(ev.content).toBe(env.canonical);
    expect(ev.kind).toBe(DEFAULT_EVENT_KIND);
    expect(ev.created_at).toBe(Date.UTC(2025, 5, 1, 12, 0, 0) / 1000);
    expect(ev.pubkey).toBe(key.publicKey);
    expect(ev.tags).toEqual([
      ['alt', 'AER-1 anchor: workflow-close 0b9f6c1e-5c1a-4b7e-9f1a-000000000001'],
      ['x', env.digestHex],
      ['i', 'aer1:0b9f6c1e-5c1a-4b7e-9f1a-000000000001'],
    ]);
    expect(ev.tags.some((t) => t[0] === 'expiration' || t[0] === '-')).toBe(false);
    expect(getEventHash(ev)).toBe(ev.id);
    expect(verifyEvent(JSON.parse(serializeEvent(ev)))).toBe(true);
  });

  it('keeps the same id when signed again (only the Schnorr nonce differs)', () => {
    const env = workflowEnvelope(2);
    const a = envelopeEvent({ canonical: env.canonical, digestHex: env.digestHex }, key);
    const b = envelopeEvent({ canonical: env.canonical, digestHex: env.digestHex }, key);
    expect(b.id).toBe(a.id);
  });

  it('takes a caller kind, created_at and summary', () => {
    const env = workflowEnvelope(3);
    const ev = envelopeEvent({ canonical: env.canonical, digestHex: env.digestHex, kind: 5555, createdAt: 1_700_000_000, summary: 'hello' }, key);
    expect(ev.kind).toBe(5555);
    expect(ev.created_at).toBe(1_700_000_000);
    expect(ev.tags[0]).toEqual(['alt', 'hello']);
  });

  it('refuses a digest that is not the SHA-256 of the content', () => {
    const env = workflowEnvelope(4);
    expect(() => envelopeEvent({ canonical: env.canonical, digestHex: sha256Hex('other') }, key)).toThrow(/digestHex: is not the SHA-256/);
  });

  it('refuses content that is not canonical JSON', () => {
    const text = JSON.stringify({ subject: 'receipt', anchored_at: '2025-01-01T00:00:00Z', type: 'zambo-receipt-anchor/1' }, null, 1);
    expect(() => envelopeEvent({ canonical: text, digestHex: sha256Hex(text) }, key)).toThrow(/canonical: must be a JSON object in canonical form/);
  });

  it('names a chain head by its job_id in the subject tag', () => {
    const canonical = canonicalJson({ type: 'zambo-receipt-anchor/1', subject: 'chain-head', job_id: 'job-7a1f', final_entry_digest: sha256Hex('e'), entry_count: 3, anchored_at: '2025-06-01T12:00:00Z' });
    const ev = envelopeEvent({ canonical, digestHex: sha256Hex(canonical) }, key);
    expect(ev.tags).toContainEqual(['i', 'aer1:job-7a1f']);
  });

  it('refuses an envelope that names no subject key', () => {
    const canonical = canonicalJson({ type: 'zambo-receipt-anchor/1', subject: 'receipt', anchored_at: '2025-06-01T12:00:00Z' });
    expect(() => envelopeEvent({ canonical, digestHex: sha256Hex(canonical) }, key)).toThrow(/canonical: the envelope names no subject key/);
  });

  it('refuses kinds that relays do not store as regular events', () => {
    const env = workflowEnvelope(5);
    for (const kind of [0, 1, 3, 999, 10002, 20001, 30078, 1000.5, -1]) {
      let err: unknown;
      try {
        envelopeEvent({ canonical: env.canonical, digestHex: env.digestHex, kind }, key);
      } catch (e) {
        err = e;
      }
      expect(err, `kind ${kind}`).toBeInstanceOf(InputError);
      expect((err as InputError).field).toBe('kind');
    }
  });
});

describe('batch event', () => {
  it('carries the canonical batch JSON of SPEC 4.1, byte for byte', () => {
    const root = sha256Hex('batch root');
    expect(batchContent('2025-06-01T12:00:00Z', root, 200)).toBe(
      `{"anchored_at":"2025-06-01T12:00:00Z","batch_root":"${root}","leaf_count":200,"tree":"rfc6962-sha256","type":"aer1-anchor-batch/1"}`,
    );
    const ev = batchEvent({ anchoredAt: '2025-06-01T12:00:00Z', batchRootHex: root, leafCount: 200 }, key);
    expect(ev.content).toBe(batchContent('2025-06-01T12:00:00Z', root, 200));
    expect(ev.tags).toEqual([
      ['alt', `AER-1 anchor batch: 200 subjects, root ${root}`],
      ['x', root],
      ['t', 'aer1-batch'],
    ]);
    expect(ev.created_at).toBe(Date.UTC(2025, 5, 1, 12, 0, 0) / 1000);
    expect(ev.kind).toBe(DEFAULT_EVENT_KIND);
    expect(verifySignedEvent(serializeEvent(ev)).ok).toBe(true);
  });

  it('refuses a bad anchored_at, root or leaf count, naming the field', () => {
    const root = sha256Hex('r');
    expect(() => batchEvent({ anchoredAt: '2025-02-30T00:00:00Z', batchRootHex: root, leafCount: 1 }, key)).toThrow(/^anchoredAt:/);
    expect(() => batchEvent({ anchoredAt: '2025-02-01T00:00:00.5Z', batchRootHex: root, leafCount: 1 }, key)).toThrow(/^anchoredAt:/);
    expect(() => batchEvent({ anchoredAt: '2025-02-01T00:00:00Z', batchRootHex: root.toUpperCase(), leafCount: 1 }, key)).toThrow(/^batchRootHex:/);
    expect(() => batchEvent({ anchoredAt: '2025-02-01T00:00:00Z', batchRootHex: root, leafCount: 0 }, key)).toThrow(/^leafCount:/);
  });
});

describe('verifySignedEvent', () => {
  const env = workflowEnvelope(6);
  const ev = envelopeEvent({ canonical: env.canonical, digestHex: env.digestHex }, key);
  const json = serializeEvent(ev);

  it('accepts a genuine event and returns its fields', () => {
    const r = verifySignedEvent(json);
    expect(r).toEqual({ ok: true, event: ev });
  });

  it('refuses altered content, tags, created_at, kind, pubkey or sig', () => {
    const other = SigningKey.parse('11'.repeat(32));
    const cases: Array<[string, Record<string, unknown>]> = [
      ['content', { ...ev, content: ev.content.replace('wf-6', 'wf-7') }],
      ['tags', { ...ev, tags: [['x', sha256Hex('x')]] }],
      ['created_at', { ...ev, created_at: ev.created_at + 1 }],
      ['kind', { ...ev, kind: ev.kind + 1 }],
      ['pubkey', { ...ev, pubkey: other.publicKey }],
      ['sig', { ...ev, sig: ev.sig.slice(0, 127) + (ev.sig.endsWith('0') ? '1' : '0') }],
    ];
    // verify the genuine one first: a verdict cached on some object must not leak
    expect(verifySignedEvent(json).ok).toBe(true);
    for (const [what, bad] of cases) {
      const r = verifySignedEvent(JSON.stringify(bad));
      expect(r.ok, what).toBe(false);
    }
  });

  it('refuses an id recomputed for altered content but signed by nobody', () => {
    const bad = { ...ev, content: ev.content + ' ' };
    bad.id = getEventHash(bad);
    const r = verifySignedEvent(JSON.stringify(bad));
    expect(r).toEqual({ ok: false, reason: expect.stringMatching(/signature/) });
  });

  it('refuses text that is not an event', () => {
    expect(verifySignedEvent('not json').ok).toBe(false);
    expect(verifySignedEvent('[]').ok).toBe(false);
    expect(verifySignedEvent(JSON.stringify({ ...ev, id: ev.id.toUpperCase() })).ok).toBe(false);
    expect(verifySignedEvent(JSON.stringify({ ...ev, tags: [[1]] })).ok).toBe(false);
  });
});

describe('event comparison', () => {
  it('sees the same event whatever the field order or extra members', () => {
    const env = workflowEnvelope(7);
    const ev = envelopeEvent({ canonical: env.canonical, digestHex: env.digestHex }, key);
    const reordered = JSON.stringify({ sig: ev.sig, content: ev.content, tags: ev.tags, kind: ev.kind, created_at: ev.created_at, pubkey: ev.pubkey, id: ev.id, seen_on: 'x' });
    expect(sameSignedEvent(reordered, ev)).toBe(true);
    expect(sameSignedEvent(serializeEvent(ev), reordered)).toBe(true);
    expect(sameSignedEvent(JSON.stringify({ ...ev, content: ev.content + ' ' }), ev)).toBe(false);
    expect(sameSignedEvent('garbage', ev)).toBe(false);
    expect(canonicalEventJson(ev)).toBe(canonicalEventJson(JSON.parse(reordered)));
  });
});

describe('the subject tag value', () => {
  it('names a key verbatim up to 256 bytes, and a longer one by its SHA-256 (relays cap tag values at 1,024 bytes)', () => {
    expect(subjectTagValue('0f1e2d3c-aaaa-4bbb-8ccc-123456789abc')).toBe('aer1:0f1e2d3c-aaaa-4bbb-8ccc-123456789abc');
    const edge = 'k'.repeat(256 - 'aer1:'.length);
    expect(subjectTagValue(edge)).toBe(`aer1:${edge}`);
    const long = '\u4e2d'.repeat(2600);
    expect(subjectTagValue(long)).toBe(`aer1:sha256:${sha256Hex(Buffer.from(long, 'utf8'))}`);
    expect(subjectTagValue(`${edge}k`)).toMatch(/^aer1:sha256:[0-9a-f]{64}$/);
  });
});
