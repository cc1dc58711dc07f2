/** The progress display: plain lines per change off a terminal, one redrawn line on a terminal. */
import { describe, expect, it } from 'vitest';
import { ProgressDisplay, type SubjectState } from '../../src/dev/demo/progress.js';

function capture(tty: boolean, columns?: number): { out: { write: (t: string) => void; tty: boolean; columns?: number }; text: () => string } {
  let text = '';
  return { out: { write: (t) => (text += t), tty, ...(columns !== undefined ? { columns } : {}) }, text: () => text };
}

const state = (label: string, status: string, nostr = 'pending', ots = 'pending'): SubjectState => ({ label, status, nostr, ots, nostrDetail: '0/3 relays', otsDetail: '0/2 calendars' });

describe('ProgressDisplay', () => {
  it('off a terminal prints one plain line per subject whose state changed, with elapsed time, and no escape codes', () => {
    let now = 1000;
    const c = capture(false);
    const d = new ProgressDisplay(c.out, 1000, () => now);
    d.update([state('receipt', 'pending'), state('workflow', 'pending')]);
    now = 1500;
    d.update([state('receipt', 'partial', 'confirmed'), state('workflow', 'pending')]);
    d.line('mining');
    d.finish();
    const lines = c.text().trimEnd().split('\n');
    expect(lines).toEqual([
      '  [  0.0s] receipt   pending (nostr pending 0/3 relays, ots pending 0/2 calendars)',
      '  [  0.0s] workflow  pending (nostr pending 0/3 relays, ots pending 0/2 calendars)',
      '  [  0.5s] receipt   partial (nostr confirmed 0/3 relays, ots pending 0/2 calendars)',
      'mining',
    ]);
    expect(c.text()).not.toContain('\x1b');
  });

  it('on a terminal redraws one compact line in place, keeps phase lines above it, and fits the width', () => {
    const c = capture(true, 40);
    const d = new ProgressDisplay(c.out, 0, () => 2000);
    d.update([state('receipt', 'pending'), state('workflow', 'pending')]);
    d.line('phase');
    d.update([state('receipt', 'confirmed', 'confirmed', 'confirmed'), state('workflow', 'confirmed', 'confirmed', 'confirmed')]);
    d.finish();
    const t = c.text();
    expect(t.split('\n')).toHaveLength(3); // the phase line, the final live line, and the end
    expect(t).toContain('\r\x1b[2K');
    for (const drawn of t.split('\r\x1b[2K')) expect(drawn.replace(/\n.*$/s, '').length).toBeLessThanOrEqual(39);
    expect(t.endsWith('\n')).toBe(true);
  });
});
