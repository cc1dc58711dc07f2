/**
 * A human-readable line for each pino JSON record, for logs read on a terminal:
 *
 *   12:01:02.345 INFO  witness ots: 1 of 2 calendars, mainnet  calendars=["https://a"] m=1
 *
 * time (local, ms), level, message, then every other field as key=value (strings bare when
 * they have no space or quote, anything else as JSON); an `err` or `error` field's stack goes
 * on the indented lines below. Ours rather than pino-pretty: that is 19 packages (13 not
 * already installed with pino, about 2 MB) for what fits here in a page (docs/reliability.md).
 */

const LEVELS: Record<number, { name: string; color: string }> = {
  10: { name: 'TRACE', color: '\x1b[90m' },
  20: { name: 'DEBUG', color: '\x1b[36m' },
  30: { name: 'INFO', color: '\x1b[32m' },
  40: { name: 'WARN', color: '\x1b[33m' },
  50: { name: 'ERROR', color: '\x1b[31m' },
  60: { name: 'FATAL', color: '\x1b[41m\x1b[97m' },
};
const RESET = '\x1b[0m';
const DIM = '\x1b[2m';
/** pino's own fields, shown in the head of the line or not at all. */
const HEAD = new Set(['time', 'level', 'msg', 'pid', 'hostname', 'name', 'v']);

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

function clock(ms: unknown): string {
  const d = typeof ms === 'number' ? new Date(ms) : new Date();
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

function value(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v) ?? String(v);
}

/** One JSON record (a line pino wrote) as one or more human-readable lines, newline-terminated. */
export function prettyLine(json: string, color = false): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) return `${json.trimEnd()}\n`;
  const level = LEVELS[Number(rec.level)] ?? { name: String(rec.level ?? '?').toUpperCase(), color: '' };
  const levelText = level.name.padEnd(5);
  const parts = [color ? `${DIM}${clock(rec.time)}${RESET}` : clock(rec.time), color ? `${level.color}${levelText}${RESET}` : levelText, String(rec.msg ?? '')];
  const fields: string[] = [];
  const stacks: string[] = [];
  for (const [k, v] of Object.entries(rec)) {
    if (HEAD.has(k)) continue;
    if ((k === 'err' || k === 'error') && v && typeof v === 'object' && typeof (v as { stack?: unknown }).stack === 'string') {
      const e = v as { message?: unknown; stack: string };
      fields.push(`${k}=${value(e.message ?? '')}`);
      stacks.push(...e.stack.split('\n').map((l) => `    ${l}`));
      continue;
    }
    fields.push(`${k}=${value(v)}`);
  }
  const head = parts.join(' ') + (fields.length > 0 ? `  ${color ? DIM : ''}${fields.join(' ')}${color ? RESET : ''}` : '');
  return [head, ...stacks].join('\n') + '\n';
}

/** A pino destination that writes each record through prettyLine to `out`. */
export function prettyDestination(out: NodeJS.WritableStream, color: boolean): { write(chunk: string): boolean } {
  return {
    write(chunk: string): boolean {
      // pino writes one record per call; a chunk could carry several lines.
      let text = '';
      for (const line of chunk.split('\n')) if (line !== '') text += prettyLine(line, color);
      return out.write(text);
    },
  };
}
