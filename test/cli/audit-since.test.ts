import { describe, expect, it } from 'vitest';
import { parseSince } from '../../src/cli/commands/audit.js';
import { UsageError } from '../../src/core/errors/errors.js';

describe('aer1-anchor audit --since', () => {
  it('takes RFC 3339 UTC with whole seconds, or unix seconds', () => {
    expect(parseSince('2026-01-31T12:00:00Z')).toBe(1_769_860_800);
    expect(parseSince('1769860800')).toBe(1_769_860_800);
    expect(parseSince(undefined)).toBeUndefined();
  });

  it('refuses impossible dates and other text as a usage error quoting a bounded prefix', () => {
    for (const bad of ['2026-02-30T00:00:00Z', '2026-01-31T12:00:00.5Z', '2026-01-31', `yesterday${'!'.repeat(100)}`]) {
      expect(() => parseSince(bad), bad).toThrow(UsageError);
    }
    expect(() => parseSince(`x${'y'.repeat(100)}`)).toThrow(`--since "x${'y'.repeat(39)}" is neither`);
  });
});
