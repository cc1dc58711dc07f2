import type { Queue } from 'bullmq';

/** Jobs by state across some queues (prioritized jobs count as waiting). */
export interface QueueDepth {
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
}

export async function queueDepth(queues: readonly Queue[]): Promise<QueueDepth> {
  const totals: QueueDepth = { waiting: 0, active: 0, delayed: 0, failed: 0 };
  for (const q of queues) {
    const c = await q.getJobCounts('waiting', 'active', 'delayed', 'failed', 'prioritized');
    totals.waiting += (c.waiting ?? 0) + (c.prioritized ?? 0);
    totals.active += c.active ?? 0;
    totals.delayed += c.delayed ?? 0;
    totals.failed += c.failed ?? 0;
  }
  return totals;
}
