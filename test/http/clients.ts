/**
 * Minimal live-event clients for tests: an SSE reader over fetch (frames parsed as the
 * EventSource spec says) and a WebSocket reader, both collecting messages until closed.
 */
import WebSocket from 'ws';
import { checkResponse, pathTemplate, responseProblems } from '../helpers/openapi.js';

export interface SseEvent {
  id: string | null;
  event: string | null;
  data: string;
}

export interface Collector<T> {
  messages: T[];
  /** Resolves with the messages once `done(messages)` holds; rejects after `timeoutMs`. */
  until(done: (messages: T[]) => boolean, timeoutMs?: number): Promise<T[]>;
  close(): void;
}

function collector<T>(close: () => void): Collector<T> & { push(m: T): void; fail(e: Error): void } {
  const messages: T[] = [];
  const waiters: Array<{ done: (m: T[]) => boolean; resolve: (m: T[]) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }> = [];
  let failure: Error | null = null;
  const check = (): void => {
    for (const w of [...waiters]) {
      if (w.done(messages)) {
        clearTimeout(w.timer);
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(messages);
      } else if (failure) {
        clearTimeout(w.timer);
        waiters.splice(waiters.indexOf(w), 1);
        w.reject(failure);
      }
    }
  };
  return {
    messages,
    push(m) {
      messages.push(m);
      check();
    },
    fail(e) {
      failure = e;
      check();
    },
    until(done, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.findIndex((w) => w.timer === timer), 1);
          reject(new Error(`timed out after ${timeoutMs} ms; got ${messages.length} messages: ${JSON.stringify(messages).slice(0, 2000)}`));
        }, timeoutMs);
        waiters.push({ done, resolve, reject, timer });
        check();
      });
    },
    close,
  };
}

/** Parses an SSE byte stream into events (the WHATWG algorithm, minus retry handling). */
export function parseSse(text: string): { events: SseEvent[]; rest: string; comments: string[] } {
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const blocks = text.split(/\r\n\r\n|\n\n|\r\r/);
  const rest = blocks.pop() ?? '';
  for (const block of blocks) {
    let id: string | null = null;
    let event: string | null = null;
    const data: string[] = [];
    for (const line of block.split(/\r\n|\n|\r/)) {
      if (line.startsWith(':')) {
        comments.push(line.slice(1).trim());
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'id') id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length > 0) events.push({ id, event, data: data.join('\n') });
  }
  return { events, rest, comments };
}

export interface SseClient extends Collector<SseEvent> {
  status: number;
  headers: Headers;
}

export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  const abort = new AbortController();
  // checked against openapi.json like every answer (the stream's body is not: it never ends)
  const res = await checkResponse('GET', url, await fetch(url, { headers: { Accept: 'text/event-stream', ...headers }, signal: abort.signal }));
  const c = collector<SseEvent>(() => abort.abort());
  const client = Object.assign(c, { status: res.status, headers: res.headers });
  if (!res.ok || !res.body) return client;
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        const parsed = parseSse(buffer);
        buffer = parsed.rest;
        for (const e of parsed.events) c.push(e);
      }
      c.fail(new Error('event stream ended'));
    } catch (err) {
      c.fail(err as Error);
    }
  })();
  return client;
}

export async function openWs(url: string, headers: Record<string, string> = {}): Promise<Collector<Record<string, unknown>> & { ws: WebSocket }> {
  const ws = new WebSocket(url, { headers });
  const c = collector<Record<string, unknown>>(() => ws.close());
  ws.on('message', (data) => c.push(JSON.parse(String(data)) as Record<string, unknown>));
  ws.on('close', () => c.fail(new Error('socket closed')));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
  return Object.assign(c, { ws });
}

/** The HTTP status a refused WebSocket upgrade answered with. */
export function wsRefusal(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => {
      ws.close();
      reject(new Error('the upgrade was accepted'));
    });
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => {
        // a refusal on a path the document lists is checked; one on another path (a 404) is what the test is about
        const path = new URL(url).pathname;
        const problems = pathTemplate(path) === null ? [] : responseProblems('GET', path, res.statusCode ?? 0, String(res.headers['content-type'] ?? ''), body);
        if (problems.length > 0) reject(new Error(`the refusal differs from openapi.json:\n  ${problems.join('\n  ')}`));
        else resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
      });
    });
    ws.once('error', () => undefined);
  });
}
