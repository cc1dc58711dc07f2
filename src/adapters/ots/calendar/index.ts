export {
  CalendarClient,
  sanitizeReason,
  OTS_ACCEPT,
  DEFAULT_TIMEOUT_MS,
  DEFAULT_MAX_RESPONSE_BYTES,
  MAX_DIGEST_BYTES,
  MAX_COMMITMENT_BYTES,
  type CalendarClientOptions,
  type TimestampAnswer,
} from './calendar-client.js';
export { CalendarError, type CalendarErrorCode } from './calendar-error.js';
export { calendarEndpoint, parseCalendarUrl } from './calendar-url.js';
export {
  submitToCalendars,
  type CalendarAnswer,
  type CalendarFailure,
  type SubmissionResult,
} from './submit-to-calendars.js';
