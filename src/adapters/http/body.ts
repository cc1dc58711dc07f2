/**
 * Request bodies: JSON only, UTF-8, at most `http.maxBodyBytes` (refused by its declared
 * length before reading when it says so, else as soon as the bytes read pass the limit).
 */
import type { IncomingMessage } from 'node:http';
import { jsonTextDepth, MAX_JSON_DEPTH } from '../../core/aer1/json-limits.js';
import { HttpError } from './respond.js';

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

function tooLarge(maxBytes: number, what: string): HttpError {
  return new HttpError(413, 'body_too_large', `request body ${what} over the limit of ${maxBytes} bytes (http.maxBodyBytes)`, undefined, { Connection: 'close' });
}

export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) throw tooLarge(maxBytes, `of ${declared} bytes is`);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw tooLarge(maxBytes, 'is');
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof HttpError) throw err;
    throw new HttpError(400, 'body_aborted', 'the request body was cut off before its end');
  }
  return Buffer.concat(chunks, size);
}

export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json' && !/^application\/[a-z0-9.+-]+\+json$/.test(type)) {
    throw new HttpError(415, 'unsupported_media_type', `the body must be JSON (Content-Type: application/json), got ${type === '' ? 'no Content-Type' : JSON.stringify(type)}`);
  }
  const raw = await readBody(req, maxBytes);
  let text: string;
  try {
    text = UTF8.decode(raw);
  } catch {
    throw new HttpError(400, 'bad_json', 'the body is not valid UTF-8', '$');
  }
  if (text.trim() === '') throw new HttpError(400, 'bad_json', 'the body is empty; expected a JSON subject', '$');
  if (jsonTextDepth(text) > MAX_JSON_DEPTH) throw new HttpError(400, 'too_deep', `the body is nested deeper than ${MAX_JSON_DEPTH} levels (the limit for any JSON input)`, '$');
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new HttpError(400, 'bad_json', `the body is not JSON: ${(err as Error).message}`, '$');
  }
}
