/**
 * An unexpected failure in a handler: the client gets 500 with a generic body and the code
 * `internal` (as openapi.json documents), never the stack or the cause; the daemon's log
 * gets the error with its stack and its cause, so it can be debugged.
 *
 * The failure is made by a deliberately broken dependency: the server is given a view of
 * the real daemon whose witness-health snapshot throws (a stand-in for a bug; everything
 * else is the real daemon on real Redis).
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/daemon/logger.js';
import { startHttpServer, type HttpServer } from '../../src/adapters/http/server.js';
import { checkedFetch } from '../helpers/openapi.js';
import { startStack, withHttp, type Stack } from './fixture.js';

let s: Stack;
let broken: HttpServer;
const lines: string[] = [];

beforeAll(async () => {
  s = await startStack();
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter((l) => l !== ''));
      done();
    },
  });
  const health = {
    ...s.daemon.health,
    snapshot(): never {
      throw new Error('witness health snapshot exploded', { cause: new Error('the root cause, deep down') });
    },
  } as unknown as Stack['daemon']['health'];
  broken = await startHttpServer({ daemon: withHttp(s.daemon, {}, { health }), log: createLogger('info', sink) });
});

afterAll(async () => {
  await broken?.close();
  await s?.close();
});

describe('a handler that throws', () => {
  it('answers 500 {"error": {"code": "internal"}} without the stack, and logs the error with its stack and cause', async () => {
    const res = await checkedFetch(`${broken.url}/readyz`);
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: { code: 'internal', message: 'internal error; see the daemon log' } });
    expect(text).not.toContain('exploded');
    expect(text).not.toContain('root cause');
    expect(text).not.toMatch(/\bat .*\.ts:\d+/);

    const logged = lines.map((l) => JSON.parse(l) as { msg: string; err?: { type: string; message: string; stack: string; cause?: { message: string; stack: string } } });
    const entry = logged.find((l) => l.msg === 'request failed');
    expect(entry, lines.join('\n')).toBeDefined();
    expect(entry!.err!.type).toBe('Error');
    expect(entry!.err!.message).toBe('witness health snapshot exploded');
    expect(entry!.err!.stack).toMatch(/^Error: witness health snapshot exploded\n\s+at /);
    expect(entry!.err!.stack).toContain('internal-errors.test.ts');
    expect(entry!.err!.cause!.message).toBe('the root cause, deep down');
    expect(entry!.err!.cause!.stack).toMatch(/\n\s+at /);
  });

  it('keeps serving: the other endpoints still answer', async () => {
    expect((await checkedFetch(`${broken.url}/livez`)).status).toBe(200);
    expect((await checkedFetch(`${broken.url}/v1/anchors?limit=1`)).status).toBe(200);
  });
});
