/**
 * The daemon's shared backoff while Redis refuses writes (issue 29): the first refusal any
 * watched worker reports pauses them all; the condition is logged once, reminded, and its end
 * logged once; the first write the probe gets through resumes every worker; errors that are
 * not refusals go to the worker's own log line. The workers here are stand-ins exposing what
 * the backoff uses of BullMQ's Worker (events, pause, resume); the real ones are exercised by
 * test/reliability/refusing-redis-quiet.test.ts.
 */
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import type { Worker } from 'bullmq';
import { pino, type Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { RefusalBackoff } from '../../src/adapters/redis/refusal-backoff.js';
import { waitFor } from '../helpers/harness.js';

class StandInWorker extends EventEmitter {
  paused = false;
  closing: Promise<void> | undefined = undefined;
  pause(): Promise<void> {
    this.paused = true;
    return Promise.resolve();
  }
  resume(): void {
    this.paused = false;
  }
  isRunning(): boolean {
    return true;
  }
}

function memoryLog(): { log: Logger; lines: () => Array<{ level: number; msg: string; err?: unknown }> } {
  const out: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      out.push(...chunk.toString('utf8').split('\n').filter((l) => l !== ''));
      cb();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines: () => out.map((l) => JSON.parse(l) as { level: number; msg: string; err?: unknown }) };
}

const OOM = "OOM command not allowed when used memory > 'maxmemory'. script: 808626431266f2e834f108cac6b35ce556927132, on @user_script:507.";

describe('RefusalBackoff', () => {
  it('pauses every watched worker on the first refusal, logs it once without a stack, and resumes them all when the probe gets a write through', async () => {
    const { log, lines } = memoryLog();
    let redisFull = true;
    let probes = 0;
    const backoff = new RefusalBackoff({
      log,
      probe: async () => {
        probes++;
        if (redisFull) throw new Error(OOM);
      },
      initialMs: 20,
      maxMs: 40,
      probeEveryMs: 20,
      reminderMs: 150,
    });
    const workers = [new StandInWorker(), new StandInWorker(), new StandInWorker()];
    const others: Error[] = [];
    for (const w of workers) backoff.watch(w as unknown as Worker, (err) => others.push(err));
    try {
      // a burst of refusals from every worker, as BullMQ 5 emits them
      for (let i = 0; i < 500; i++) workers[i % 3]!.emit('error', new Error(OOM));
      expect(backoff.holding).toBe(true);
      expect(workers.every((w) => w.paused)).toBe(true);
      expect(others).toEqual([]);
      await waitFor('a reminder', () => lines().some((l) => l.msg.startsWith('Redis still refuses writes')), 5000, 10);
      const warned = lines().filter((l) => l.msg.startsWith('Redis refuses writes'));
      expect(warned).toHaveLength(1);
      expect(warned[0]!.msg).toContain("OOM command not allowed when used memory > 'maxmemory'.");
      expect(lines().some((l) => l.err !== undefined || JSON.stringify(l).includes('stack'))).toBe(false);
      expect(workers.every((w) => w.paused)).toBe(true);

      redisFull = false;
      await waitFor('workers resumed', () => workers.every((w) => !w.paused), 5000, 10);
      expect(backoff.holding).toBe(false);
      expect(lines().filter((l) => l.msg === 'Redis takes writes again; workers resumed')).toHaveLength(1);
      const probesAtEnd = probes;

      // an error that is not Redis's state goes to the worker's own line, pausing nothing
      workers[0]!.emit('error', new Error('ERR unknown command'));
      expect(others.map((e) => e.message)).toEqual(['ERR unknown command']);
      expect(backoff.holding).toBe(false);
      expect(workers.some((w) => w.paused)).toBe(false);

      // the same condition again soon: paused again, not announced again
      workers[1]!.emit('error', new Error(`Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down`));
      expect(workers.every((w) => w.paused)).toBe(true);
      await waitFor('resumed again', () => workers.every((w) => !w.paused), 5000, 10);
      expect(lines().filter((l) => l.msg.startsWith('Redis refuses writes'))).toHaveLength(1);
      expect(probes).toBeGreaterThan(probesAtEnd);
    } finally {
      backoff.close();
    }
  });

  it('a worker watched while Redis refuses starts paused', async () => {
    const { log } = memoryLog();
    const backoff = new RefusalBackoff({ log, probe: () => Promise.reject(new Error(OOM)), initialMs: 20, maxMs: 20, probeEveryMs: 20 });
    try {
      expect(backoff.refused(new Error(OOM))).toBe(true);
      const late = new StandInWorker();
      backoff.watch(late as unknown as Worker, () => undefined);
      expect(late.paused).toBe(true);
      expect(backoff.refused(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'))).toBe(false);
    } finally {
      backoff.close();
    }
  });
});
