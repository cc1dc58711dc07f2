import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { InputError } from '../../../src/core/errors/errors.js';
import {
  CalendarClient,
  CalendarError,
  calendarEndpoint,
  submitToCalendars,
} from '../../../src/adapters/ots/calendar/index.js';
import { startDevCalendar, type DevCalendar } from '../../../src/dev/calendar/index.js';

const sha = (b: Buffer): Buffer => createHash('sha256').update(b).digest();
const digest = sha(Buffer.from('client test'));
const cleanups: (() => Promise<void>)[] = [];

afterAll(async () => {
  await Promise.all(cleanups.map((c) => c()));
});

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/** An HTTP server whose answer the test scripts; it records every request. */
async function scripted(handler: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

/** A TCP server that accepts connections and never says anything. */
async function silentTcp(): Promise<string> {
  const sockets = new Set<Socket>();
  const server: TcpServer = createTcpServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.resume();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function devCalendar(): Promise<DevCalendar> {
  const cal = await startDevCalendar({ aggregationMs: 20 });
  cleanups.push(() => cal.close());
  return cal;
}

async function failure(p: Promise<unknown>): Promise<CalendarError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(CalendarError);
    return err as CalendarError;
  }
  throw new Error('expected a CalendarError, got an answer');
}

describe('calendar URLs keep their path prefix', () => {
  it('joins endpoints under the base path, with or without a trailing slash', () => {
    expect(calendarEndpoint('https://a.pool.opentimestamps.org', 'digest')).toBe('https://a.pool.opentimestamps.org/digest');
    expect(calendarEndpoint('http://h/x/', 'digest')).toBe('http://h/x/digest');
    expect(calendarEndpoint('http://h/x', 'digest')).toBe('http://h/x/digest');
    expect(calendarEndpoint('http://h:8080/a/b', 'timestamp/00ff')).toBe('http://h:8080/a/b/timestamp/00ff');
  });

  it('sends requests to the prefixed paths with the OpenTimestamps Accept header', async () => {
    const server = await scripted((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      res.end(Buffer.from('0083dfe30d2ef90c8e0201', 'hex'));
    });
    for (const base of [`${server.url}/pfx/cal`, `${server.url}/pfx/cal/`]) {
      const client = new CalendarClient(base, { userAgent: 'test-agent/1' });
      await client.submit(digest);
      await client.getTimestamp(Buffer.alloc(44, 0xab));
    }
    expect(server.seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'POST /pfx/cal/digest',
      `GET /pfx/cal/timestamp/${'ab'.repeat(44)}`,
      'POST /pfx/cal/digest',
      `GET /pfx/cal/timestamp/${'ab'.repeat(44)}`,
    ]);
    expect(server.seen[0]!.body).toEqual(digest);
    for (const s of server.seen) {
      expect(s.headers.accept).toBe('application/vnd.opentimestamps.v1');
      expect(s.headers['user-agent']).toBe('test-agent/1');
      // as python's urllib: no compression asked for
      expect(s.headers['accept-encoding']).toBe('identity');
    }
  });

  it('refuses URLs that are not plain http(s) calendar bases', () => {
    expect(() => new CalendarClient('ftp://h/')).toThrow(InputError);
    expect(() => new CalendarClient('http://h/?x=1')).toThrow(/query/);
    expect(() => new CalendarClient('not a url')).toThrow(/does not parse/);
  });
});

describe('answers', () => {
  it('returns the raw submit answer and classifies 404 reasons', async () => {
    const server = await scripted((req, res) => {
      const reasons: Record<string, string> = {
        [`/timestamp/${'01'.repeat(44)}`]: 'Pending confirmation in Bitcoin blockchain',
        [`/timestamp/${'02'.repeat(44)}`]: `Timestamped by transaction ${'ab'.repeat(32)}; waiting for 6 confirmations`,
        [`/timestamp/${'03'.repeat(44)}`]: 'Not found',
        [`/timestamp/${'04'.repeat(44)}`]: '<html>404\nNot Found</html>',
      };
      const reason = reasons[req.url ?? ''];
      if (reason !== undefined) {
        res.writeHead(404, { 'Content-Type': 'text/plain' });
        res.end(reason);
      } else {
        res.writeHead(200);
        res.end(Buffer.from('f00101' + '00'.repeat(10), 'hex'));
      }
    });
    const client = new CalendarClient(server.url);
    expect((await client.submit(digest)).toString('hex')).toBe('f00101' + '00'.repeat(10));
    expect(await client.getTimestamp(Buffer.alloc(44, 1))).toEqual({ status: 'pending', reason: 'Pending confirmation in Bitcoin blockchain' });
    expect(await client.getTimestamp(Buffer.alloc(44, 2))).toEqual({
      status: 'pending',
      reason: `Timestamped by transaction ${'ab'.repeat(32)}; waiting for 6 confirmations`,
    });
    expect(await client.getTimestamp(Buffer.alloc(44, 3))).toEqual({ status: 'not-found', reason: 'Not found' });
    // like python-opentimestamps, a reason keeps only harmless characters
    expect(await client.getTimestamp(Buffer.alloc(44, 4))).toEqual({ status: 'not-found', reason: '_html_404_Not Found__html_' });
    expect(await client.getTimestamp(Buffer.alloc(44, 5))).toMatchObject({ status: 'complete' });
  });

  it('turns a 500 into CalendarError http_status naming the calendar', async () => {
    const cal = await devCalendar();
    cal.setMode('error500');
    const client = new CalendarClient(cal.url);
    const err = await failure(client.submit(digest));
    expect(err.code).toBe('http_status');
    expect(err.status).toBe(500);
    expect(err.url).toBe(cal.url);
    expect(err.message).toContain(cal.url);
    expect((await failure(client.getTimestamp(Buffer.alloc(44)))).code).toBe('http_status');
  });

  it('turns an empty 200 into bad_response and a closed port into network', async () => {
    const server = await scripted((_req, res) => {
      res.writeHead(200);
      res.end();
    });
    expect((await failure(new CalendarClient(server.url).submit(digest))).code).toBe('bad_response');
    const closed = createTcpServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const err = await failure(new CalendarClient(`http://127.0.0.1:${port}`).submit(digest));
    expect(err.code).toBe('network');
    expect(err.message).toContain(`http://127.0.0.1:${port}`);
  });

  it('refuses digests the real server would refuse, before any request', async () => {
    const client = new CalendarClient('http://127.0.0.1:9');
    await expect(client.submit(Buffer.alloc(65))).rejects.toThrow(InputError);
    await expect(client.submit(Buffer.alloc(0))).rejects.toThrow(InputError);
  });
});

describe('redirects', () => {
  it('does not follow a redirect to another host: the answer is an error naming where it pointed', async () => {
    const elsewhere = await scripted((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      res.end(Buffer.from('f010', 'hex'));
    });
    const redirecting = await scripted((_req, res) => {
      res.writeHead(302, { Location: `${elsewhere.url}/digest` });
      res.end();
    });
    const err = await new CalendarClient(redirecting.url).submit(digest).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CalendarError);
    expect((err as CalendarError).code).toBe('http_status');
    expect((err as CalendarError).message).toContain(`redirect to another host (${elsewhere.url.replace('http://', '')})`);
    expect(elsewhere.seen).toHaveLength(0);
  });

  it('follows a redirect on the calendar\'s own origin', async () => {
    const cal = await scripted((req, res) => {
      if (req.url === '/old/digest') {
        res.writeHead(307, { Location: '/new/digest' });
        res.end();
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      res.end(Buffer.from('0883dfe30d2ef90c8e0403616263', 'hex'));
    });
    const bytes = await new CalendarClient(`${cal.url}/old`).submit(digest);
    expect(bytes.toString('hex')).toBe('0883dfe30d2ef90c8e0403616263');
    expect(cal.seen.map((s) => s.url)).toEqual(['/old/digest', '/new/digest']);
  });
});

describe('every request has a deadline', () => {
  it('times out against a calendar in hang mode', async () => {
    const cal = await devCalendar();
    cal.setMode('hang');
    const client = new CalendarClient(cal.url, { timeoutMs: 300 });
    const err = await failure(client.submit(digest));
    expect(err.code).toBe('timeout');
    expect(err.message).toContain(cal.url);
    expect((await failure(client.getTimestamp(Buffer.alloc(44)))).code).toBe('timeout');
  });

  it('times out against a TCP server that accepts and never answers', async () => {
    const url = await silentTcp();
    const err = await failure(new CalendarClient(url, { timeoutMs: 300 }).submit(digest));
    expect(err.code).toBe('timeout');
  });

  it('times out when the body stalls after the headers', async () => {
    const server = await scripted((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      res.write(Buffer.alloc(10));
      // never ends
    });
    const err = await failure(new CalendarClient(server.url, { timeoutMs: 300 }).submit(digest));
    expect(err.code).toBe('timeout');
    expect(err.message).toContain('reading the body');
  });
});

describe('answers are capped', () => {
  it('refuses a declared Content-Length over the cap', async () => {
    const server = await scripted((_req, res) => {
      res.writeHead(200, { 'Content-Length': 20_000 });
      res.end(Buffer.alloc(20_000));
    });
    const err = await failure(new CalendarClient(server.url).submit(digest));
    expect(err.code).toBe('too_large');
    expect(err.message).toContain('10000 bytes');
  });

  it('aborts an endless chunked stream once it passes the cap (before any deadline)', async () => {
    let stop = false;
    cleanups.push(async () => {
      stop = true;
    });
    const server = await scripted((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      const pump = (): void => {
        if (stop || res.destroyed) return;
        res.write(Buffer.alloc(1000), () => setImmediate(pump));
      };
      pump();
    });
    const err = await failure(new CalendarClient(server.url, { timeoutMs: 30_000, maxResponseBytes: 5000 }).submit(digest));
    expect(err.code).toBe('too_large');
  });

  it('accepts an answer exactly at the cap', async () => {
    const server = await scripted((_req, res) => {
      res.writeHead(200);
      res.end(Buffer.alloc(10_000, 1));
    });
    expect((await new CalendarClient(server.url).submit(digest)).length).toBe(10_000);
  });
});

describe('compressed answers (a calendar or proxy that gzips although we asked for identity)', () => {
  it('decodes a gzip answer to the same bytes, from a scripted server and from the dev calendar in gzip mode', async () => {
    const answer = Buffer.from('0083dfe30d2ef90c8e0201', 'hex');
    const server = await scripted((_req, res) => {
      const body = gzipSync(answer);
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Encoding': 'gzip', 'Content-Length': body.length });
      res.end(body);
    });
    expect(await new CalendarClient(server.url).submit(digest)).toEqual(answer);

    const cal = await startDevCalendar({ aggregationMs: 20, gzip: true });
    cleanups.push(() => cal.close());
    const bytes = await new CalendarClient(cal.url).submit(digest);
    expect(bytes.subarray(0, 2).toString('hex')).toBe('f010'); // the nonce op, not gzip's 1f8b
    expect(bytes.includes(Buffer.from(cal.url))).toBe(true);
  });

  it('a body that claims gzip and is not: bad_response naming the encoding', async () => {
    const server = await scripted((_req, res) => {
      res.writeHead(200, { 'Content-Encoding': 'gzip', 'Content-Length': 9 });
      res.end(Buffer.from('garbage!!'));
    });
    const err = await failure(new CalendarClient(server.url).submit(digest));
    expect(err.code).toBe('bad_response');
    expect(err.message).toMatch(/gzip body does not decode/);
  });

  it('the cap counts decoded bytes: a 1 MB answer gzipped to 1 KB is refused as too_large', async () => {
    const body = gzipSync(Buffer.alloc(1_000_000));
    expect(body.length).toBeLessThan(10_000);
    const server = await scripted((_req, res) => {
      res.writeHead(200, { 'Content-Encoding': 'gzip', 'Content-Length': body.length });
      res.end(body);
    });
    const err = await failure(new CalendarClient(server.url).submit(digest));
    expect(err.code).toBe('too_large');
  });
});

describe('submitToCalendars', () => {
  it('succeeds with m of n answers and reports every failure by calendar', async () => {
    const [good, broken, hanging] = await Promise.all([devCalendar(), devCalendar(), devCalendar()]);
    broken.setMode('error500');
    hanging.setMode('hang');
    // only the hanging calendar gets a short deadline, so a slow machine cannot fail the others
    const clients = [good, broken, hanging].map((c) => new CalendarClient(c.url, { timeoutMs: c === hanging ? 400 : 10_000 }));

    const one = await submitToCalendars(clients, digest, { m: 1 });
    expect(one.ok).toBe(true);
    expect(one.answers.map((a) => a.url)).toEqual([good.url]);
    expect(one.answers[0]!.bytes.subarray(0, 2).toString('hex')).toBe('f010');
    expect(one.failures.map((f) => [f.url, f.code])).toEqual([
      [broken.url, 'http_status'],
      [hanging.url, 'timeout'],
    ]);

    const two = await submitToCalendars(clients, digest, { m: 2 });
    expect(two.ok).toBe(false);
    expect(two.answers).toHaveLength(1);

    broken.setMode('ok');
    hanging.setMode('ok');
    const relaxed = [good, broken, hanging].map((c) => new CalendarClient(c.url));
    const all = await submitToCalendars(relaxed, digest, { m: 3 });
    expect(all).toMatchObject({ ok: true, failures: [] });
    expect(all.answers.map((a) => a.url)).toEqual([good.url, broken.url, hanging.url]);
  });

  it('refuses an m outside 1..n', async () => {
    const clients = [new CalendarClient('http://127.0.0.1:9')];
    await expect(submitToCalendars(clients, digest, { m: 0 })).rejects.toThrow(InputError);
    await expect(submitToCalendars(clients, digest, { m: 2 })).rejects.toThrow(/1\.\.1/);
  });
});
