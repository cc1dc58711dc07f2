import { shardLogDir } from '../../adapters/config/config.js';
import { writeFileSync } from 'node:fs';
import { ProofExporter } from '../../adapters/proof/export.js';
import { configuredSources } from '../../adapters/state/subject-view.js';
import { ProofArchive } from '../../adapters/archive/proof-archive.js';
import { CLIENT_OPTIONS, connectClient } from '../shared/connect.js';
import { commandArgs } from '../shared/args.js';
import { readJsonFile, UsageError } from '../shared/run.js';

export const summary = "print a subject's aer1-anchor-proof-v1, or attach it to the receipt file";

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = commandArgs(argv, { ...CLIENT_OPTIONS, attach: { type: 'string' }, out: { type: 'string' } }, { positionals: true });
  const usage = 'usage: aer1-anchor proof KEY [--attach RECEIPT_FILE [--out FILE]] [--config FILE] [--redis-url URL]';
  if (values.help) {
    process.stdout.write(`${usage}\n  ${summary}\n`);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError(usage);
  const receipt = values.attach ? readJsonFile(values.attach) : null;
  if (receipt !== null && (typeof receipt !== 'object' || Array.isArray(receipt))) {
    throw new UsageError(`${values.attach} must hold a JSON object to attach a proof to (for a timeline, use {"entries": [...]})`);
  }
  const client = await connectClient(values);
  try {
    const key = positionals[0]!;
    const store = client.state.of(key);
    // the anchor log's folder of the key's shard (log.enabled): the proof carries its inclusion
    const c = client.config;
    const logDir = c.log.enabled ? shardLogDir(c, client.state.shards.indexOf(store)) : null;
    let proof = await new ProofExporter(store, configuredSources(c), logDir === null ? null : { dir: logDir }).export(key);
    // retired from Redis: the archive holds it (archive.dir), unless Redis still knows the key (refused)
    if (!proof && client.config.archive.dir !== null && !(await client.state.getRecord(key))) {
      proof = (await new ProofArchive(client.config.archive.dir).read(key))?.proof ?? null;
    }
    if (!proof) {
      process.stderr.write(`aer1-anchor: no anchored subject with key ${positionals[0]}\n`);
      return 1;
    }
    if (receipt && values.attach) {
      const out = values.out ?? values.attach;
      writeFileSync(out, JSON.stringify({ ...(receipt as object), anchor_proof: proof }, null, 2) + '\n');
      process.stdout.write(`${out}: anchor_proof attached (status ${proof.status})\n`);
    } else {
      process.stdout.write(JSON.stringify(proof, null, 2) + '\n');
    }
    return 0;
  } finally {
    await client.close();
  }
}
