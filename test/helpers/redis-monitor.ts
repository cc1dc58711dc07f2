/**
 * MONITOR on a plain socket: every command a Redis runs, as the server reports it. ioredis's
 * own `monitor()` switches its connection to monitoring only a microtask after MONITOR's
 * `+OK`, so a command line that arrives in the same read as the `+OK` (a busy server) fails
 * its command queue ("Command queue state error", redis/ioredis#1981); a socket has no queue.
 * Lines are split as ioredis does (`"a" "b"` → [a, b], `\"` unescaped; the source is
 * `lua` or the client's `host:port`).
 */
import { connect, type Socket } from 'node:net';

export type MonitorListener = (args: string[], source: string) => void;

export interface RedisMonitor {
  /** Stops monitoring (closes the socket). */
  stop(): void;
}

/** Starts MONITOR on `url` (redis://host:port) and resolves once the server has said `+OK`. */
export function startMonitor(url: string, listener: MonitorListener): Promise<RedisMonitor> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ host: hostname, port: Number(port) });
    let buffered = '';
    let ok = false;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`MONITOR on ${url}: no +OK within 10 s`));
    }, 10_000);
    socket.setEncoding('utf8');
    // before +OK an error fails the start; after it, the server going away ends the lines (never an uncaught error)
    socket.on('error', (err) => {
      clearTimeout(timer);
      if (!ok) reject(err);
    });
    socket.on('connect', () => socket.write('MONITOR\r\n'));
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      for (let end = buffered.indexOf('\r\n'); end >= 0; end = buffered.indexOf('\r\n')) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (!ok) {
          if (line !== '+OK') {
            clearTimeout(timer);
            socket.destroy();
            reject(new Error(`MONITOR on ${url}: the server said ${line.slice(0, 200)}`));
            return;
          }
          ok = true;
          clearTimeout(timer);
          resolve({ stop: () => socket.destroy() });
          continue;
        }
        if (!line.startsWith('+')) continue;
        const text = line.slice(1);
        const open = text.indexOf('[');
        const close = text.indexOf(']', open);
        const argAt = text.indexOf('"', close);
        if (open < 0 || close < 0 || argAt < 0) continue;
        const source = text.slice(open + 1, close).split(' ')[1] ?? '';
        const args = text
          .slice(argAt + 1, -1)
          .split('" "')
          .map((a) => a.replace(/\\"/g, '"'));
        listener(args, source);
      }
    });
  });
}
