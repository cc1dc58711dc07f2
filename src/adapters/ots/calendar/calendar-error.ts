import { Aer1Error } from '../../../core/errors/errors.js';

export const CALENDAR_ERROR_CODES = [
  'timeout',
  'http_status',
  'too_large',
  'network',
  'bad_response',
] as const;
export type CalendarErrorCode = (typeof CALENDAR_ERROR_CODES)[number];

/** A calendar that did not give a usable answer; the message names the calendar URL. */
export class CalendarError extends Aer1Error {
  declare readonly code: CalendarErrorCode;
  /** The calendar's base URL. */
  readonly url: string;
  /** The HTTP status, when the calendar answered one. */
  readonly status: number | undefined;

  constructor(code: CalendarErrorCode, url: string, message: string, status?: number) {
    super(code, `calendar ${url}: ${message}`);
    this.url = url;
    this.status = status;
  }
}
