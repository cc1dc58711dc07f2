/**
 * The dev calendar's switches: a fault mode and the awkward but
 * legitimate ways a real calendar answers (a `Not found` window right after a round, gzip
 * answers, slow answers). Protocol requests obey them; the dev endpoints (`/mine`,
 * `/mode/…`) never do.
 */
import { InputError } from '../../core/errors/errors.js';

/**
 * How protocol requests are answered: `ok`; `error500` (500 to everything); `hang` (accept,
 * never answer); `garbage` (200 with bytes that are no timestamp); `oversized` (200 with
 * 20,000 bytes, twice what clients read); `redirect` (307 to another host).
 */
export type DevCalendarMode = 'ok' | 'error500' | 'hang' | 'garbage' | 'oversized' | 'redirect';
export const MODES: readonly DevCalendarMode[] = ['ok', 'error500', 'hang', 'garbage', 'oversized', 'redirect'];

/** Where `redirect` mode points: a host nobody configured (`.invalid` never resolves). */
export const REDIRECT_HOST = 'http://calendar.invalid';
export const GARBAGE_ANSWER = Buffer.from('this is not a timestamp');
export const OVERSIZED_BYTES = 20_000;

export interface DevCalendarBehaviour {
  /**
   * For this many ms after a round closes, `GET /timestamp/<its commitment>` answers 404
   * `Not found`, as the real server does until the round is in its journal (about a second).
   * Default 0.
   */
  notFoundMs: number;
  /** Answer protocol requests gzip-compressed (`Content-Encoding: gzip`), whatever the client asked. Default false. */
  gzip: boolean;
  /** Hold every protocol answer this long before sending it (a slow calendar). Default 0. */
  delayMs: number;
}

export const DEFAULT_BEHAVIOUR: DevCalendarBehaviour = { notFoundMs: 0, gzip: false, delayMs: 0 };

/** Longest `notFoundMs` / `delayMs` accepted: ten minutes. */
export const MAX_BEHAVIOUR_MS = 600_000;

export function checkMode(m: string): DevCalendarMode {
  if (!MODES.includes(m as DevCalendarMode)) throw new InputError('bad_option', `mode must be one of ${MODES.join(', ')}`, 'mode');
  return m as DevCalendarMode;
}

/** `current` with `change` applied; each field checked, named in the error. */
export function mergeBehaviour(current: DevCalendarBehaviour, change: Partial<DevCalendarBehaviour>): DevCalendarBehaviour {
  const next = { ...current };
  for (const field of ['notFoundMs', 'delayMs'] as const) {
    const v = change[field];
    if (v === undefined) continue;
    if (!Number.isInteger(v) || v < 0 || v > MAX_BEHAVIOUR_MS) {
      throw new InputError('bad_option', `${field} must be an integer in 0..${MAX_BEHAVIOUR_MS}, got ${JSON.stringify(v)}`, field);
    }
    next[field] = v;
  }
  if (change.gzip !== undefined) {
    if (typeof change.gzip !== 'boolean') throw new InputError('bad_option', `gzip must be true or false, got ${JSON.stringify(change.gzip)}`, 'gzip');
    next.gzip = change.gzip;
  }
  return next;
}
