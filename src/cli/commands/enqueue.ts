import { parseArgs } from 'node:util';
import { Aer1Error } from '../../core/errors/errors.js';
import { enqueueAnchor, type EnqueueOutcome } from '../../adapters/queue/producer.js';
import { CLIENT_OPTIONS, connectClient } from '../shared/connect.js';
import { readJsonFile, UsageError } from '../shared/run.js';

export const summary = 'validate documents (or bare fields) and enqueue them for anchoring';

const USAGE = 'usage: aer1-anchor enqueue FILE... [--json] [--config FILE] [--redis-url URL]';

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: CLIENT_OPTIONS, allowPositionals: true, strict: true });
  if (values.help) {
    process.stdout.write(`${USAGE}\n  ${summary}; Redis from --redis-url, else REDIS_URL / redis.url, else 127.0.0.1:6379, else the daemon's embedded redis-server (recorded in redis.embeddedDir/aer1-redis.json).\n`);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError(USAGE);
  const docs = positionals.map((file) => ({ file, data: readJsonFile(file) }));
  const client = await connectClient(values);
  const results: Array<{ file: string } & (EnqueueOutcome | { error: string; code: string })> = [];
  try {
    for (const { file, data } of docs) {
      try {
        const out = await enqueueAnchor(client.queue(), client.store, data, { ...client.config.limits });
        results.push({ file, ...out });
      } catch (err) {
        if (!(err instanceof Aer1Error)) throw err;
        results.push({ file, error: err.message, code: err.code });
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
      else process.stdout.write(`${r.file}: ${r.key}: ${r.result === 'queued' ? 'queued' : r.result === 'in-queue' ? 'already queued' : `already anchored (${r.status})`}\n`);
    }
  }
  return results.some((r) => 'error' in r) ? 1 : 0;
}
