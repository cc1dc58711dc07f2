/**
 * Figures and how they are shown: a table for people, one JSON object per line for
 * tools (`--json`). A figure reports; it never asserts. Targets are shown beside it.
 */
import { cpus, loadavg } from 'node:os';

export interface Machine {
  cores: number;
  node: string;
  cpu: string;
}

export function machine(): Machine {
  const list = cpus();
  return { cores: list.length, node: process.version, cpu: list[0]?.model.trim() ?? 'unknown' };
}

export function load(): [number, number, number] {
  const [a, b, c] = loadavg();
  return [round(a ?? 0, 2), round(b ?? 0, 2), round(c ?? 0, 2)];
}

export interface Target {
  /** `>=`, `<=` or `<` the bound. */
  op: '>=' | '<=' | '<';
  bound: number;
}

export interface Figure {
  figure: string;
  /** The reported value: the median of `samples`. */
  value: number | null;
  unit: string;
  n: number | null;
  runs: number;
  median: number | null;
  samples: number[];
  target: Target | null;
  /** Whether the value meets the target (null without one or without a value). */
  meets: boolean | null;
  note: string;
  /** 1-, 5- and 15-minute load average when the figure was taken. */
  load: [number, number, number];
  machine: { cores: number; node: string };
}

export function median(xs: readonly number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function figure(
  name: string,
  unit: string,
  samples: readonly number[],
  opts: { n?: number | null; target?: Target | null; note?: string; digits?: number; load?: [number, number, number] } = {},
): Figure {
  const digits = opts.digits ?? 1;
  const clean = samples.filter((x) => Number.isFinite(x)).map((x) => round(x, digits));
  const m = median(clean);
  const target = opts.target ?? null;
  const meets = target && m !== null ? (target.op === '>=' ? m >= target.bound : target.op === '<' ? m < target.bound : m <= target.bound) : null;
  const mc = machine();
  return {
    figure: name,
    value: m,
    unit,
    n: opts.n ?? null,
    runs: clean.length,
    median: m,
    samples: clean,
    target,
    meets,
    note: opts.note ?? '',
    load: opts.load ?? load(),
    machine: { cores: mc.cores, node: mc.node },
  };
}

function fmt(v: number | null): string {
  if (v === null) return '—';
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US');
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

function targetText(f: Figure): string {
  if (!f.target) return '';
  const bound = f.target.bound.toLocaleString('en-US');
  const verdict = f.meets === null ? '' : f.meets ? ' met' : ' NOT met';
  return `${f.target.op} ${bound}${verdict}`;
}

/** A plain-text table (also valid Markdown). */
export function table(figures: readonly Figure[]): string {
  const rows = figures.map((f) => [
    f.figure,
    `${fmt(f.value)} ${f.unit}`,
    f.n === null ? '' : f.n.toLocaleString('en-US'),
    f.runs > 1 ? `median of ${f.runs}` : String(f.runs),
    targetText(f),
    f.note,
  ]);
  const head = ['figure', 'value', 'N', 'runs', 'target', 'note'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}
