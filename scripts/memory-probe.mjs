// Preloaded into a daemon by `node dist/bench/memory-run.js` (NODE_OPTIONS=--import this file).
// Samples process.memoryUsage() every 50 ms (keeping the peaks, and every 500 ms a point of a
// bounded series: time, rss, heapTotal, heapUsed, external, arrayBuffers, and V8's new
// space size, old space size and old space used); when the file
// `$AER1_MEMORY_PROBE.req` appears, runs a full GC (with --expose-gc), writes the figures
// after it, the peaks and the series (taken before that GC) as JSON to $AER1_MEMORY_PROBE and
// removes the request. Bench only.
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';

const file = process.env.AER1_MEMORY_PROBE;
if (file) {
  const peak = { rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
  const series = [];
  let tick = 0;
  const timer = setInterval(() => {
    const u = process.memoryUsage();
    for (const k of Object.keys(peak)) peak[k] = Math.max(peak[k], u[k]);
    if (tick++ % 10 === 0) {
      const space = (name) => getHeapSpaceStatistics().find((x) => x.space_name === name) ?? { space_size: 0, space_used_size: 0 };
      const nw = space('new_space');
      const old = space('old_space');
      series.push([Date.now(), u.rss, u.heapTotal, u.heapUsed, u.external, u.arrayBuffers, nw.space_size, old.space_size, old.space_used_size]);
      if (series.length > 1200) series.shift(); // the last 10 minutes
    }
    if (!existsSync(`${file}.req`)) return;
    if (typeof globalThis.gc === 'function') globalThis.gc();
    writeFileSync(file, JSON.stringify({ ...process.memoryUsage(), peak, series }));
    // removed last: a reader waits for the request to go, then reads a complete file
    rmSync(`${file}.req`, { force: true });
  }, 50);
  timer.unref();
}
