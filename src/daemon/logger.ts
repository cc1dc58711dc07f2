import { pino, type Logger } from 'pino';

/** The daemon's logger: JSON lines on stderr; secrets are redacted by path as a second line of defence. */
export function createLogger(level: string, destination: NodeJS.WritableStream = process.stderr): Logger {
  return pino(
    {
      level,
      base: { name: 'aer1-anchord' },
      redact: { paths: ['token', 'secret', 'secretKey', 'key.secret', 'headers.authorization', '*.token', '*.secret'], censor: '[redacted]' },
    },
    destination as unknown as import('pino').DestinationStream,
  );
}

export type { Logger };
