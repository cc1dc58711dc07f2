/**
 * What a failed job attempt leaves in Redis. BullMQ writes the error's message to the job's
 * `failedReason` and appends its stack to the job's `stacktrace` on every attempt (unless the
 * job was added with `stackTraceLimit`, which issuers' jobs need not be). A job retried for
 * hours — a relay refusing with a long reason, a calendar down, a full Redis — grew its hash
 * without bound: 22 KB of reason and 111 KB of stacks after 5 attempts of a relay publish,
 * and a full Redis grew to 241 MB against a 50 MB cap. So every processor is wrapped: the
 * message is cut to MAX_ERROR_TEXT characters and the stack is dropped before BullMQ sees it.
 */
import type { Logger } from 'pino';

export const MAX_ERROR_TEXT = 500;

export function boundErrorText(text: string, max = MAX_ERROR_TEXT): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * The processor, failing with the same error (its class and name kept, so BullMQ's
 * `UnrecoverableError`, `DelayedError` and rate-limit errors keep working) but with a
 * bounded message and no stack.
 */
export function boundedFailures<J, R>(processor: (job: J, token?: string) => Promise<R>, log?: Logger): (job: J, token?: string) => Promise<R> {
  return async (job, token) => {
    try {
      return await processor(job, token);
    } catch (err) {
      // the whole error, stack included, goes to the log (at debug) rather than to Redis
      log?.debug({ err }, 'job attempt failed');
      if (!(err instanceof Error)) throw new Error(boundErrorText(String(err)));
      err.message = boundErrorText(err.message);
      err.stack = '';
      throw err;
    }
  };
}
