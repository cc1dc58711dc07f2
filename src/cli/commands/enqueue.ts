import { Aer1Error } from '../../core/errors/errors.js';
import type { EnqueueOutcome } from '../../adapters/queue/producer.js';
import { enqueueAnchorRouted, enqueueAnchorsRouted } from '../../adapters/queue/routed-producer.js';
import { CLIENT_OPTIONS, connectClient } from '../shared/connect.js';
import { commandArgs } from '../shared/args.js';
import { readJsonFile, UsageError } from '../shared/run.js';

export const summary = 'validate documents (or bare fields) and enqueue them for anchoring';

const USAGE = 'usage: aer1-anchor enqueue FILE... [--json] [--config FILE] [--redis-url URL]';

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = commandArgs(argv, CLIENT_OPTIONS, { positionals: true });
  if (values.help) {
    process.stdout.write(`${USAGE}\n  ${summary}; several files go in bulk jobs of up to queue.maxSubjectsPerJob subjects; Redis from --redis-url, else the Redis Cluster in AER1_REDIS_CLUSTER / redis.cluster, else REDIS_URL / redis.url, else 127.0.0.1:6379, else the daemon's embedded redis-server (recorded in redis.embeddedDir/aer1-redis.json).\n`);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError(USAGE);
  const docs = positionals.map((file) => ({ file, data: readJsonFile(file) }));
  const client = await connectClient(values);
  const results: Array<{ file: string } & ((EnqueueOutcome & { job?: string }) | { error: string; code: string })> = [];
  try {
    if (docs.length === 1) {
      const { file, data } = docs[0]!;
      try {
        results.push({ file, ...(await enqueueAnchorRouted(client.targets(), data, { ...client.config.limits })) });
      } catch (err) {
        if (!(err instanceof Aer1Error)) throw err;
        results.push({ file, error: err.message, code: err.code });
      }
    } else {
      // several files: bulk jobs, each file validated on its own
      const outcomes = await enqueueAnchorsRouted(client.targets(), docs.map((d) => d.data), { ...client.config.limits }, { maxSubjectsPerJob: client.config.queue.maxSubjectsPerJob });
      for (const o of outcomes) {
        const file = docs[o.index]!.file;
        if ('error' in o) results.push({ file, error: o.error.message, code: o.error.code });
        else {
          const { index: _i, ...rest } = o;
          results.push({ file, ...rest });
        }
      }
    }
  } finally {
    await client.close();
  }
  if (values.json) {
    process.stdout.write(JSON.stringify(results, null, 2) + '\n');
  } else {
    for (const r of results) {
      if ('error' in r) process.stdout.write(`${r.file}: refused: ${r.error}\n`);
      else process.stdout.write(`${r.file}: ${r.key}: ${r.result === 'queued' ? `queued${r.job ? ` (bulk job ${r.job})` : ''}` : r.result === 'in-queue' ? 'already queued' : `already anchored (${r.status})`}\n`);
    }
  }
  return results.some((r) => 'error' in r) ? 1 : 0;
}
