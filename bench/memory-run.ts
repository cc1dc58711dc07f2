/**
 * What the daemon's memory is made of with N subjects pending: the intake bench's setup
 * (bulk jobs, batchers held back) with a probe preloaded into the daemon child
 * (scripts/memory-probe.mjs): after a full GC, process.memoryUsage() (rss, heapUsed,
 * external, arrayBuffers) beside the child's VmRSS, and optionally a heap snapshot
 * (--heapsnapshot-signal) to diff between two N.
 *
 *   node dist/bench/memory-run.js [--n 0,10000,100000] [--snapshot DIR] [--per-job 1000] [--settle 1-9] [--step MS]
 *
 * Besides the table, it prints the probe's series (rss, heapTotal, heapUsed, external,
 * arrayBuffers, V8's new and old space; no forced GC) from 30 s before acceptance, one line every `--step` ms (1000).
 *
 * For experiments: BENCH_QUEUE_CONCURRENCY and BENCH_MAX_SUBJECTS_IN_FLIGHT set the child's
 * queue.concurrency and queue.maxSubjectsInFlight (any bench),
 * BENCH_EXTRA_NODE_OPTIONS adds to the child's NODE_OPTIONS (this one).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { intakeRun } from './intake-run.js';
import { killAllTracked, removeTempDir, sleep, startPeers, tempDir, type DaemonChild } from './processes.js';

const PROBE = resolve(dirname(fileURLToPath(import.meta.url)), '../../scripts/memory-probe.mjs');
const MB = 1024 * 1024;
/** The probe's series: [time ms, rss, heapTotal, heapUsed, external, arrayBuffers, new space, old space, old space used], every 500 ms. */
type Usage = NodeJS.MemoryUsage & { peak: NodeJS.MemoryUsage; series?: Array<[number, number, number, number, number, number, number, number, number]> };

async function waitFor(cond: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  for (let i = 0; i < ms / 50 + 10; i++) {
    if (cond()) return;
    if (Date.now() > deadline) break;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function probe(file: string, child: DaemonChild): Promise<Usage> {
  writeFileSync(`${file}.req`, '');
  await waitFor(() => !existsSync(`${file}.req`), 30_000, 'the memory probe');
  void child;
  return JSON.parse(readFileSync(file, 'utf8')) as Usage;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { n: { type: 'string', default: '0,10000,100000' }, snapshot: { type: 'string' }, 'per-job': { type: 'string', default: '1000' }, settle: { type: 'string' }, step: { type: 'string', default: '1000' } } });
  const ns = values.n.split(',').map(Number);
  const peers = await startPeers({ roundMs: 1000, relays: 1, calendars: 1 });
  const rows: string[] = [];
  try {
    for (const n of ns) {
      const dir = tempDir('memory');
      const file = join(dir, 'usage.json');
      const snapDir = values.snapshot ? resolve(values.snapshot) : null;
      if (snapDir) mkdirSync(snapDir, { recursive: true });
      let usage: Usage | null = null;
      const trail: string[] = [];
      let vm: { rss: number; hwm: number } | null = null;
      let acceptedAt = 0;
      await intakeRun({
        n,
        perJob: Number(values['per-job']),
        peers,
        timeoutMs: 600_000,
        daemon: {
          nodeOptions: `--import=${PROBE} ${process.env.BENCH_EXTRA_NODE_OPTIONS ?? ''} --expose-gc${snapDir ? ' --heapsnapshot-signal=SIGUSR2' : ''}`,
          env: { AER1_MEMORY_PROBE: file },
        },
        atPending: async (child) => {
          // VmRSS with no forced GC: as the intake ends, and for a while after (V8's memory reducer)
          const t0 = Date.now();
          acceptedAt = t0;
          for (const at of [0, 1000, 5000, 10_000, 20_000, 30_000, 45_000, 60_000, 90_000].slice(0, Number(values.settle ?? '6'))) {
            await sleep(Math.max(0, t0 + at - Date.now()));
            trail.push(`${at / 1000}s ${((child.memory()?.rss ?? 0) / MB).toFixed(1)}`);
          }
          usage = await probe(file, child);
          vm = child.memory();
          if (snapDir) {
            const cwd = dirname(child.logFile);
            child.child.kill('SIGUSR2');
            await waitFor(() => readdirSync(cwd).some((f) => f.endsWith('.heapsnapshot')), 120_000, 'the heap snapshot');
            // written in place; wait until its size stops growing
            const snap = () => readdirSync(cwd).find((f) => f.endsWith('.heapsnapshot'))!;
            let last = -1;
            for (let i = 0; i < 600; i++) {
              const size = statSync(join(cwd, snap())).size;
              if (size === last && size > 0) break;
              last = size;
              await sleep(500);
            }
            renameSync(join(cwd, snap()), join(snapDir, `daemon-${n}.heapsnapshot`));
          }
        },
      });
      const u = usage as Usage | null;
      const v = vm as { rss: number; hwm: number } | null;
      if (!u) throw new Error(`N=${n}: not every subject got in`);
      const row = `| ${n.toLocaleString('en-US')} | ${((v?.rss ?? 0) / MB).toFixed(1)} | ${(u.rss / MB).toFixed(1)} | ${(u.heapTotal / MB).toFixed(1)} | ${(u.heapUsed / MB).toFixed(1)} | ${(u.external / MB).toFixed(1)} | ${(u.arrayBuffers / MB).toFixed(1)} | ${((v?.hwm ?? 0) / MB).toFixed(1)} | ${(u.peak.heapTotal / MB).toFixed(1)} | ${(u.peak.heapUsed / MB).toFixed(1)} | ${(u.peak.external / MB).toFixed(1)} |`;
      console.log(row, 'VmRSS before GC:', trail.join(', '));
      // the probe's series (no forced GC), from 30 s before acceptance, every `--step` ms
      const step = Number(values.step);
      let next = -Infinity;
      for (const [t, rss, heapTotal, heapUsed, external, arrayBuffers, newSpace, oldSpace, oldUsed] of u.series ?? []) {
        if (t < acceptedAt - 30_000 || t < next) continue;
        next = t + step;
        const mb = (x: number): string => (x / MB).toFixed(0).padStart(4);
        console.log(`  ${((t - acceptedAt) / 1000).toFixed(1).padStart(6)} s  rss ${mb(rss)}  heapTotal ${mb(heapTotal)}  heapUsed ${mb(heapUsed)}  external ${mb(external)}  arrayBuffers ${mb(arrayBuffers)}  new space ${mb(newSpace)}  old space ${mb(oldSpace)} (used ${mb(oldUsed)})`);
      }
      rows.push(row);
      removeTempDir(dir);
    }
  } finally {
    await peers.stop();
    killAllTracked();
  }
  console.log('\n| pending | VmRSS MB | rss MB (after GC) | heapTotal | heapUsed | external | arrayBuffers | VmHWM | peak heapTotal | peak heapUsed | peak external |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n' + rows.join('\n'));
}

await main();
