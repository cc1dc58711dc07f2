import { pino, stdSerializers, type Logger } from 'pino';

/**
 * The daemon's logger: JSON lines on stderr; secrets are redacted by path as a second line of
 * defence. Errors are logged as `{ err }`: type, message, stack, and `cause` as an error of
 * its own (pino's errWithCause serializer), so a failure deep in a library is debuggable.
 */
export function createLogger(level: string, destination: NodeJS.WritableStream = process.stderr): Logger {
  return pino(
    {
      level,
      base: { name: 'aer1-anchord' },
      serializers: { err: stdSerializers.errWithCause },
      redact: { paths: ['token', 'secret', 'secretKey', 'key.secret', 'headers.authorization', '*.token', '*.secret'], censor: '[redacted]' },
    },
    destination as unknown as import('pino').DestinationStream,
  );
}

export type { Logger };
