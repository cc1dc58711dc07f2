import { EventEmitter } from 'node:events';
import type { Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { compactAfterBursts, fullGc } from '../../src/adapters/queue/heap-compaction.js';
import { createLogger } from '../../src/daemon/logger.js';
import { waitFor } from '../helpers/harness.js';

function fakeWorker(): EventEmitter & Worker {
  return new EventEmitter() as EventEmitter & Worker;
}

describe('the intake collects its garbage once quiet', () => {
  it('after a burst of enough subjects, once, and not after a few', { timeout: 10_000 }, async () => {
    const worker = fakeWorker();
    let gcs = 0;
    const c = compactAfterBursts(worker, createLogger('silent'), { minSubjects: 2000, quietMs: 20, gc: () => void gcs++ });
    for (let i = 0; i < 3; i++) worker.emit('completed', {}, { bulk: true, subjects: 1000 });
    await waitFor('the collection after the burst', () => c.collections() === 1 || undefined);
    expect(gcs).toBe(2);
    // a few single-subject jobs later: below the threshold, nothing more
    for (let i = 0; i < 5; i++) worker.emit('completed', {}, { key: 'k', result: 'created' });
    worker.emit('failed', {}, new Error('refused'));
    const t0 = Date.now();
    await waitFor('a quiet period gone by', () => Date.now() - t0 > 200 || undefined);
    expect(c.collections()).toBe(1);
    worker.emit('closed');
  });

  it('can be had without --expose-gc', () => {
    expect(typeof fullGc()).toBe('function');
  });
});
