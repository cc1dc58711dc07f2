/**
 * Submits one digest to every calendar at once; succeeds when at least `m` answer.
 * Every calendar's outcome is reported, so the caller can record per-calendar status.
 */
import { InputError } from '../../../core/errors/errors.js';
import { MAX_DIGEST_BYTES, type CalendarClient } from './calendar-client.js';
import { CalendarError, type CalendarErrorCode } from './calendar-error.js';

export interface CalendarAnswer {
  url: string;
  /** Serialized timestamp starting at the submitted digest. */
  bytes: Buffer;
}

export interface CalendarFailure {
  url: string;
  code: CalendarErrorCode;
  message: string;
}

export interface SubmissionResult {
  /** At least `m` calendars answered. */
  ok: boolean;
  answers: CalendarAnswer[];
  failures: CalendarFailure[];
}

export async function submitToCalendars(
  clients: readonly CalendarClient[],
  digest: Buffer,
  opts: { m: number },
): Promise<SubmissionResult> {
  const { m } = opts;
  if (!Number.isInteger(m) || m < 1 || m > clients.length) {
    throw new InputError('bad_option', `m must be an integer in 1..${clients.length} (the number of calendars), got ${m}`);
  }
  if (digest.length === 0 || digest.length > MAX_DIGEST_BYTES) {
    throw new InputError('bad_digest', `a calendar digest is 1..${MAX_DIGEST_BYTES} bytes, got ${digest.length}`);
  }
  const settled = await Promise.allSettled(clients.map((c) => c.submit(digest)));
  const answers: CalendarAnswer[] = [];
  const failures: CalendarFailure[] = [];
  settled.forEach((s, i) => {
    const url = clients[i]!.url;
    if (s.status === 'fulfilled') answers.push({ url, bytes: s.value });
    else if (s.reason instanceof CalendarError) failures.push({ url, code: s.reason.code, message: s.reason.message });
    else failures.push({ url, code: 'network', message: `calendar ${url}: ${(s.reason as Error)?.message ?? String(s.reason)}` });
  });
  return { ok: answers.length >= m, answers, failures };
}
