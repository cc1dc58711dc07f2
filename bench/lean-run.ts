/**
 * `npm run bench -- --lean`: Redis bytes per subject once confirmed, with the anchor log on,
 * retention off beside retention on (lean retirement: docs/reliability.md, Retention), in one
 * run. The used_memory rows are INFO used_memory deltas from before the first enqueue, divided
 * by N: with retention off read once every subject is confirmed, with it on once every
 * subject is retired (the meta counter `retired` reached N); at a few thousand subjects they
 * are mostly what does not grow with subjects (client buffers, the script cache, the change
 * stream up to its cap). The first row is the MEMORY USAGE sums per kind of key
 * (bench/memory.ts) of the keys that do grow with subjects, per subject: the target's figure.
 */
import type { DaemonRunOptions, DaemonRunResult } from './daemon-run.js';
import { daemonRun } from './daemon-run.js';
import { figure, median, type Figure } from './report.js';
import { BULL_EVENTS, CLIENT_BUFFERS, OUTSIDE_KEYS, SCRIPT_CACHE } from './memory.js';

/** Issue 26 item 6: Redis per confirmed subject with retention on. */
export const TARGET_RETIRED_BYTES = 400;

type Base = Pick<DaemonRunOptions, 'peers' | 'windowMs' | 'ratePerMinute' | 'confirmTimeoutMs'>;

/** The two runs, retention off then on, `rounds` times alternating; `done` reports each. */
export async function leanRuns(base: Base, n: number, rounds: number, done: (r: DaemonRunResult, label: string) => void): Promise<Record<'kept' | 'retired', DaemonRunResult[]>> {
  const out: Record<'kept' | 'retired', DaemonRunResult[]> = { kept: [], retired: [] };
  for (let i = 0; i < rounds; i++) {
    for (const side of ['kept', 'retired'] as const) {
      const r = await daemonRun({ ...base, mode: 'batch', intake: 'bulk', n, timeoutMs: 120_000, confirm: true, exportProofs: false, log: true, retention: side === 'retired' });
      done(r, side === 'kept' ? 'log on, retention off' : 'log on, retention on (lean)');
      out[side].push(r);
    }
  }
  return out;
}

export function leanFigures(kept: readonly DaemonRunResult[], retired: readonly DaemonRunResult[]): Figure[] {
  const n = retired[0]?.n ?? kept[0]?.n ?? null;
  const keptBytes = kept.flatMap((r) => (r.memory.perConfirmedSubject === null ? [] : [r.memory.perConfirmedSubject]));
  const retiredBytes = retired.flatMap((r) => (r.memory.perRetiredSubject === null ? [] : [r.memory.perRetiredSubject]));
  const missing = [...kept, ...retired].filter((r) => (r.memory.perConfirmedSubject ?? r.memory.perRetiredSubject) === null).length;
  const note = missing > 0 ? `; ${missing} run(s) NOT CONFIRMED or NOT RETIRED, left out` : '';
  const top = Object.entries(retired.at(-1)?.memory.breakdown?.perSubject ?? {}).filter(([, b]) => Math.abs(b) >= 2).map(([kind, b]) => `${kind} ${b}`).join(', ');
  const stats = retired.at(-1)?.memory.retiredStats ?? null;
  const k = median(keptBytes);
  const r = median(retiredBytes);
  // the keys that grow with subjects: all but the capped streams (the change stream keeps about
  // 100,000 subject events, BullMQ's event streams their own cap) and what is paid once per Redis
  const growing = (r: DaemonRunResult): number[] => {
    const per = r.memory.breakdown?.perSubject;
    if (!per) return [];
    return [Object.entries(per).reduce((a, [kind, b]) => (kind === 'state-change stream' || kind.startsWith(BULL_EVENTS) || kind === SCRIPT_CACHE || kind === CLIENT_BUFFERS || kind === OUTSIDE_KEYS ? a : a + b), 0)];
  };
  return [
    figure('Redis per retired subject, keys growing with subjects (lean)', 'B', retired.flatMap((r) => (r.memory.perRetiredSubject === null ? [] : growing(r))), {
      n,
      digits: 0,
      load: retired.at(-1)?.load,
      target: { op: '<=', bound: TARGET_RETIRED_BYTES },
      note: `MEMORY USAGE summed per kind of key, added per subject, every subject retired: all kinds but the capped change stream and BullMQ event streams, the script cache and Redis's own tables (in the used_memory row below); kept: ${kept.flatMap(growing).map((b) => `${Math.round(b)} B`).join(', ') || '—'}`,
    }),
    figure('Redis per confirmed subject, log on, retention off', 'B', keptBytes, { n, digits: 0, load: kept.at(-1)?.load, note: `INFO used_memory delta / N, every subject confirmed${note}` }),
    figure('Redis per retired subject, log on, retention on (lean)', 'B', retiredBytes, {
      n,
      digits: 0,
      load: retired.at(-1)?.load,
      target: { op: '<=', bound: TARGET_RETIRED_BYTES },
      note: `INFO used_memory delta / N, every subject retired (retire took ${retired.map((x) => (x.memory.retireMs === null ? '—' : `${Math.round(x.memory.retireMs)} ms`)).join(', ')}); MEMORY USAGE per subject by kind: ${top || '—'}; MEMORY STATS then: ${stats ? `main table ${stats.mainTable} B, clients ${stats.clients} B, ${stats.keys} keys` : '—'}${note}`,
    }),
    figure('Redis per subject, lean retired / kept', '×', k && r ? [r / k] : [], { n, digits: 2, note: 'medians, same run' }),
  ];
}
