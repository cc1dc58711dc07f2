/** The shared retry delay lives in `src/core/retry/backoff.ts` (pure); re-exported for the queue adapters. */
export { backoffDelay, attemptsForHorizon, nominalBackoff, BACKOFF_JITTER } from '../../core/retry/backoff.js';
