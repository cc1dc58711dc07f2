import { pino, stdSerializers, type DestinationStream, type Logger } from 'pino';
import { prettyDestination } from './pretty-log.js';

export type LogFormat = 'auto' | 'json' | 'pretty';

/**
 * Whether records go out as JSON lines or human-readable ones: `auto` is pretty when the
 * destination is a terminal (colours unless NO_COLOR is set), JSON lines otherwise (a pipe,
 * a file, journald, docker logs).
 */
export function resolveLogFormat(format: LogFormat, destination: NodeJS.WritableStream, env: NodeJS.ProcessEnv = process.env): { pretty: boolean; color: boolean } {
  const tty = (destination as { isTTY?: boolean }).isTTY === true;
  const pretty = format === 'pretty' || (format === 'auto' && tty);
  return { pretty, color: pretty && tty && !env.NO_COLOR };
}

/**
 * The daemon's logger: JSON lines on stderr (pretty ones on a terminal); secrets are
 * redacted by path as a second line of defence. Errors are logged as `{ err }`: type,
 * message, stack, and `cause` as an error of its own (pino's errWithCause serializer), so
 * a failure deep in a library is debuggable.
 */
export function createLogger(level: string, destination: NodeJS.WritableStream = process.stderr, format: LogFormat = 'auto'): Logger {
  const { pretty, color } = resolveLogFormat(format, destination);
  return pino(
    {
      level,
      base: { name: 'aer1-anchord' },
      serializers: { err: stdSerializers.errWithCause },
      redact: { paths: ['token', 'secret', 'secretKey', 'key.secret', 'headers.authorization', '*.token', '*.secret'], censor: '[redacted]' },
    },
    (pretty ? prettyDestination(destination, color) : destination) as unknown as DestinationStream,
  );
}

export type { Logger };
