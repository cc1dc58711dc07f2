/**
 * `aer1-anchor tsa stamp|verify`: ask an RFC 3161 TSA for a token over a checkpoint's note
 * body (or any file), and check a token, by hand. Trust is the caller's: `--tsa-ca FILE`.
 */
import { writeFileSync } from 'node:fs';
import { TsaClient, TsaError } from '../../adapters/tsa/index.js';
import { parseNote } from '../../core/log/note.js';
import { LogFormatError } from '../../core/log/errors.js';
import {
  MAX_TOKEN_BYTES, NO_TSA_TRUST_ANCHORS, TsaFormatError, checkTimeStampToken, parseTsaTrustAnchors, type TimestampCheck,
  type TsaTrustAnchors,
} from '../../core/tsa/index.js';
import { readInputBytes, readInputText, UsageError } from '../shared/run.js';
import { commandArgs } from '../shared/args.js';

export const summary = 'get or check an RFC 3161 timestamp token for a checkpoint (--tsa-ca FILE)';

const USAGE = `usage: aer1-anchor tsa stamp URL (--checkpoint FILE | --data FILE) [--tsa-ca FILE] [--out TOKEN] [--json]
       aer1-anchor tsa verify --token FILE (--checkpoint FILE | --data FILE) [--tsa-ca FILE] [--json]

--checkpoint FILE time-stamps the note body (the signed text without its signature lines);
--data FILE the file's bytes. --tsa-ca FILE is a PEM bundle of the TSA CAs you trust.
Exit 0 PASS, 1 FAIL, 2 usage or unreadable input, 3 TSA not trusted (no --tsa-ca, or the
token's certificate does not chain to one given).`;

const EXIT: Record<TimestampCheck['status'], number> = { PASS: 0, FAIL: 1, untrusted: 3 };

function dataOf(values: { checkpoint?: string; data?: string }): Uint8Array {
  if ((values.checkpoint === undefined) === (values.data === undefined)) throw new UsageError(`give one of --checkpoint FILE or --data FILE. See --help`);
  if (values.data !== undefined) return readInputBytes(values.data);
  try {
    return new TextEncoder().encode(parseNote(readInputBytes(values.checkpoint!), values.checkpoint).text);
  } catch (err) {
    if (err instanceof LogFormatError) throw new UsageError(err.message, 'unreadable');
    throw err;
  }
}

/** `--tsa-ca FILE`: a PEM bundle of the TSA CAs the caller trusts; none: no anchor (tokens are "not trusted"). */
export function anchorsOf(file: string | undefined): TsaTrustAnchors {
  if (file === undefined) return NO_TSA_TRUST_ANCHORS;
  try {
    return parseTsaTrustAnchors(readInputText(file), file);
  } catch (err) {
    if (err instanceof TsaFormatError) throw new UsageError(err.message, 'unreadable');
    throw err;
  }
}

function report(check: TimestampCheck, json: boolean, extra: Record<string, string> = {}): number {
  if (json) process.stdout.write(JSON.stringify({ ...extra, ...check }) + '\n');
  else process.stdout.write(`${check.status === 'untrusted' ? 'TSA NOT TRUSTED' : check.status}: ${check.detail}\n`);
  return EXIT[check.status];
}

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = commandArgs(argv, {
    checkpoint: { type: 'string' },
    data: { type: 'string' },
    token: { type: 'string' },
    'tsa-ca': { type: 'string' },
    out: { type: 'string' },
    json: { type: 'boolean' },
  }, { positionals: true });
  const [sub, ...rest] = positionals;
  if (values.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  if (sub === 'stamp') {
    if (rest.length !== 1) throw new UsageError(`tsa stamp takes one TSA URL. See --help`);
    const data = dataOf(values);
    let client: TsaClient;
    try {
      client = new TsaClient(rest[0]!, { trustAnchors: anchorsOf(values['tsa-ca']) });
    } catch (err) {
      if (err instanceof TsaError) throw new UsageError(err.message, 'usage');
      throw err;
    }
    let got;
    try {
      got = await client.timestamp(data);
    } catch (err) {
      if (err instanceof TsaError) {
        process.stderr.write(`aer1-anchor: ${err.message}\n`);
        return 1;
      }
      throw err;
    }
    const token = Buffer.from(got.token);
    if (values.out !== undefined) writeFileSync(values.out, token);
    return report(got.check, values.json ?? false, { url: got.url, token: token.toString('base64') });
  }
  if (sub === 'verify') {
    if (rest.length !== 0) throw new UsageError(`tsa verify takes no positional argument. See --help`);
    if (values.token === undefined) throw new UsageError(`--token FILE is required. See --help`);
    const token = readInputBytes(values.token, MAX_TOKEN_BYTES);
    const data = dataOf(values);
    return report(await checkTimeStampToken(token, { data, trustAnchors: anchorsOf(values['tsa-ca']) }, values.token), values.json ?? false);
  }
  throw new UsageError(`unknown tsa command ${JSON.stringify(sub ?? '')} (stamp or verify). See --help`);
}
