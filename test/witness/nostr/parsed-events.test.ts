/**
 * The relay drains' shared parse of stored events (src/adapters/nostr/parsed-events.ts): every
 * relay gets the event its stored text holds, the text parsed once while every relay reads the
 * same text, and anew when the text differs.
 */
import { describe, expect, it } from 'vitest';
import { ParsedEvents } from '../../../src/adapters/nostr/parsed-events.js';
import { serializeEvent } from '../../../src/core/nostr/events.js';
import { eventFor } from './fixtures.js';

describe('ParsedEvents', () => {
  it('hands each of the relays the event of the stored text, parsed once, then forgets it', () => {
    const ev = eventFor(1);
    const json = serializeEvent(ev);
    const parsed = new ParsedEvents(3, 10);
    const first = parsed.parse(ev.id, json);
    expect(first).toEqual(ev);
    // the copy Redis sends the next relay is another string with the same text
    expect(parsed.parse(ev.id, `${json} `.trimEnd())).toBe(first);
    expect(parsed.parse(ev.id, json)).toBe(first);
    expect(parsed.size).toBe(0);
    // a fourth read (a retry) parses again
    const again = parsed.parse(ev.id, json);
    expect(again).not.toBe(first);
    expect(again).toEqual(ev);
  });

  it('parses a stored text that differs from the one held, and refuses one that is not JSON', () => {
    const ev = eventFor(2);
    const parsed = new ParsedEvents(3, 10);
    parsed.parse(ev.id, serializeEvent(ev));
    const other = { ...ev, sig: ev.sig.replace(/^./, (c) => (c === '0' ? '1' : '0')) };
    expect(parsed.parse(ev.id, serializeEvent(other))).toEqual(other);
    expect(() => parsed.parse('x', '{"id":')).toThrow(SyntaxError);
  });

  it('holds at most `max` events, the oldest leaving first', () => {
    const parsed = new ParsedEvents(3, 2);
    const [a, b, c] = [eventFor(3), eventFor(4), eventFor(5)];
    const pa = parsed.parse(a.id, serializeEvent(a));
    const pb = parsed.parse(b.id, serializeEvent(b));
    parsed.parse(c.id, serializeEvent(c));
    expect(parsed.size).toBe(2);
    expect(parsed.parse(b.id, serializeEvent(b))).toBe(pb);
    expect(parsed.parse(a.id, serializeEvent(a))).not.toBe(pa);
  });

  it('keeps nothing with one relay', () => {
    const ev = eventFor(6);
    const parsed = new ParsedEvents(1, 10);
    expect(parsed.parse(ev.id, serializeEvent(ev))).toEqual(ev);
    expect(parsed.size).toBe(0);
  });
});
