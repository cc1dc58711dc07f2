/**
 * Subject keys BullMQ will not take as a job id (an integer, or a ':' outside the
 * `a:b:c` form): the producer behind `aer1-anchor enqueue` and `POST /v1/anchors` still
 * queues them (under an id BullMQ picks; intake takes the key from the document), and the
 * daemon anchors them under their own key, idempotently.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/daemon.js';
import { enqueueAnchor } from '../../src/adapters/queue/producer.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import { Issuer, startDaemon, startRelays, testConfig, waitFor } from '../helpers/harness.js';

const hex = 'ab'.repeat(32);

describe('subject keys that cannot be BullMQ job ids', () => {
  let relay: DevRelay;
  let daemon: Daemon;
  let issuer: Issuer;
  let limits: { maxJobBytes: number };

  beforeAll(async () => {
    [relay] = (await startRelays(1)) as [DevRelay];
    const config = testConfig({ relays: [relay] });
    limits = { ...config.limits };
    daemon = await startDaemon(config);
    issuer = new Issuer(config);
  });
  afterAll(async () => {
    await daemon?.stop();
    await issuer?.close();
    await relay?.close();
  });

  const suffix = String(Date.now() % 1_000_000_000);
  const KEYS = [`${suffix}`, `7${suffix}`, `a:${suffix}`, `x:y:z:${suffix}`, `urn:uuid:${suffix}`];

  it.each(KEYS)('queues and anchors the key %j, once', { timeout: 60_000 }, async (key) => {
    const data = { subject: 'receipt', receipt_uuid: key, output_sha256: hex };
    const first = await enqueueAnchor(issuer.queue, issuer.store.subjects, data, limits);
    expect(first.key).toBe(key);
    await waitFor('confirmed', async () => (await issuer.store.subjects.getRecord(key))?.status === 'confirmed', 30_000);
    const again = await enqueueAnchor(issuer.queue, issuer.store.subjects, data, limits);
    expect(again).toMatchObject({ key, result: 'known', status: 'confirmed' });
    const record = await issuer.store.subjects.getRecord(key);
    expect(relay.events().filter((e) => e.id === record!.nostrEventId)).toHaveLength(1);
  });
});
