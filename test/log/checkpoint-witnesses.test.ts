/**
 * The checkpoint loop's durable cursor (CheckpointWitnesses, checkpoints/witnessed): a TSA
 * that is down leaves the checkpoint not done and the cursor where it was, across a
 * restart; once the TSA answers, the next process catches up every checkpoint after the
 * cursor, in order, and moves the cursor past them. A real log folder and the dev TSA.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WitnessHealth } from '../../src/adapters/health/witness-health.js';
import { DaemonMetrics } from '../../src/adapters/metrics/metrics.js';
import { CheckpointWitnesses } from '../../src/adapters/time/checkpoint-witnesses.js';
import { TsaClient } from '../../src/adapters/tsa/tsa-client.js';
import { checkCheckpointTimestamps } from '../../src/core/tsa/index.js';
import { parseTsaTrustAnchors } from '../../src/core/tsa/trust-anchors.js';
import { createLogger } from '../../src/daemon/logger.js';
import { startDevTsa } from '../../src/dev/tsa/index.js';
import { noteText, openLog, tempDir } from '../witness/witness-fixtures.js';

const tmp = tempDir('aer1-cp-witnesses-');
afterAll(() => tmp.remove());

function loop(dir: string, tsaUrl: string, health: WitnessHealth): CheckpointWitnesses {
  return new CheckpointWitnesses({
    dir, tsas: [new TsaClient(tsaUrl, { timeoutMs: 2000 })], tsaQuorum: 1, witnesses: [], witnessQuorum: 0,
    intervalMs: 60_000, maxAttempts: 5, isWriter: () => true,
  }, health, new DaemonMetrics(), createLogger('silent'));
}

describe('the time witnesses\' cursor', () => {
  it('holds at a checkpoint while its TSA is down, across a restart, then catches up in order', async () => {
    const dir = join(tmp.dir, 'log');
    const log = await openLog(dir);
    const health = new WitnessHealth(createLogger('silent'));
    // started with the log: the empty tree is passed over, the cursor made before the first entries
    expect((await loop(dir, 'http://127.0.0.1:1/', health).pass()).map((r) => [r.size, r.done])).toEqual([[0, true]]);
    const first = await log.grow(5);
    const second = await log.grow(4);

    const down = await loop(dir, 'http://127.0.0.1:1/', health).pass();
    expect(down.map((r) => [r.size, r.tokens, r.done])).toEqual([[5, 0, false]]);
    expect(readFileSync(join(dir, 'checkpoints', 'witnessed'), 'utf8').trim()).toBe('0');
    expect(health.snapshot().find((h) => h.kind === 'tsa')?.lastError?.message).toMatch(/checkpoint 5: .*(ECONNREFUSED|failed)/);

    const tsa = await startDevTsa({ outDir: join(tmp.dir, 'tsa') });
    try {
      const up = await loop(dir, tsa.url, health).pass();
      expect(up.map((r) => [r.size, r.tokens, r.done])).toEqual([[5, 1, true], [9, 1, true]]);
      expect(readFileSync(join(dir, 'checkpoints', 'witnessed'), 'utf8').trim()).toBe('9');
      const anchors = parseTsaTrustAnchors(readFileSync(tsa.caFile!, 'utf8'));
      for (const [size, note] of [[5, first], [9, second]] as const) {
        const kept = JSON.parse(readFileSync(join(dir, 'checkpoints', `${size}.tsr.json`), 'utf8')) as unknown;
        expect((await checkCheckpointTimestamps(noteText(note), kept, anchors)).map((r) => r.status), `size ${size}`).toEqual(['PASS']);
      }
      // done: a later pass asks nothing
      expect(await loop(dir, tsa.url, health).pass()).toEqual([]);
      expect(tsa.answered()).toBe(2);
    } finally {
      await tsa.close();
    }
  });
});
