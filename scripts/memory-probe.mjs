// Preloaded into a daemon by `node dist/bench/memory-run.js` (NODE_OPTIONS=--import this file).
// Samples process.memoryUsage() every 50 ms (keeping the peaks); when the file
// `$AER1_MEMORY_PROBE.req` appears, runs a full GC (with --expose-gc), writes the figures
// after it and the peaks so far as JSON to $AER1_MEMORY_PROBE and removes the request. Bench only.
import { existsSync, rmSync, writeFileSync } from 'node:fs';

const file = process.env.AER1_MEMORY_PROBE;
if (file) {
  const peak = { rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
  const timer = setInterval(() => {
    const u = process.memoryUsage();
    for (const k of Object.keys(peak)) peak[k] = Math.max(peak[k], u[k]);
    if (!existsSync(`${file}.req`)) return;
    if (typeof globalThis.gc === 'function') globalThis.gc();
    writeFileSync(file, JSON.stringify({ ...process.memoryUsage(), peak }));
    // removed last: a reader waits for the request to go, then reads a complete file
    rmSync(`${file}.req`, { force: true });
  }, 50);
  timer.unref();
}
