/**
 * WebhookHandover: how retention hands a proof to the webhooks and knows every one took it
 * (docs/reliability.md, Retention). Retention adds a `proof` entry to the change stream
 * (`{"type": "proof", "key", "status", "at", "digest", "proof"}`, the proof exactly as
 * `GET /v1/anchors/{key}/proof` answers it) and notes the offer; the webhook fan-out
 * delivers it to every hook like any change; a hook's 2xx for that entry is noted as its
 * acknowledgement. A subject counts as handed over when every configured hook acknowledged
 * a proof of the subject's current digest (an acknowledgement left from an earlier anchoring
 * of the key names another digest and does not count).
 *
 * Keys, under the daemon's hash-tagged prefix: `{prefix}:ret:offered` (subject key →
 * "<digest> <ms offered>") and `{prefix}:ret:ack:<hook id>` (subject key → digest).
 */
import type { RedisClient as Redis } from '../redis/connection.js';
import type { AnchorProof } from '../../core/proof/format.js';
import { formatAnchoredAt } from '../../core/envelope/envelope.js';

/** The change-stream entry type that carries a proof to the webhooks. */
export const PROOF_ENTRY = 'proof';

export interface HandoverState {
  /** When the proof of this digest was offered (ms), or null when it was not (or another digest was). */
  offeredMs: number | null;
  /** Every hook acknowledged a proof of this digest. */
  acknowledged: boolean;
}

export class WebhookHandover {
  private readonly redis: Redis;
  private readonly base: string;
  readonly hooks: readonly string[];

  /** `base` is the daemon's hash-tagged prefix (`StateKeys.base`); `hooks` the hook ids. */
  constructor(redis: Redis, base: string, hooks: readonly string[]) {
    this.redis = redis;
    this.base = base;
    this.hooks = hooks;
  }

  get offeredKey(): string {
    return `${this.base}:ret:offered`;
  }

  ackKey(hook: string): string {
    return `${this.base}:ret:ack:${hook}`;
  }

  /** Where each subject's handover stands, for its current digest. */
  async states(items: ReadonlyArray<{ key: string; digest: string }>): Promise<HandoverState[]> {
    if (items.length === 0) return [];
    const pipe = this.redis.pipeline();
    for (const { key } of items) {
      pipe.hget(this.offeredKey, key);
      for (const h of this.hooks) pipe.hget(this.ackKey(h), key);
    }
    const res = (await pipe.exec()) ?? [];
    const per = 1 + this.hooks.length;
    return items.map(({ digest }, i) => {
      const values = res.slice(i * per, (i + 1) * per).map(([err, v]) => {
        if (err) throw err;
        return v as string | null;
      });
      const [offered, ...acks] = values;
      const [offeredDigest, ms] = (offered ?? '').split(' ');
      return {
        offeredMs: offeredDigest === digest && ms ? Number(ms) : null,
        acknowledged: this.hooks.length > 0 && acks.every((a) => a === digest),
      };
    });
  }

  /**
   * Adds the proof to the change stream (for the webhooks), counts it in the stream's tally
   * (`StateKeys.eventTally`: the state scripts trim the stream by it, stream-lib.lua) and
   * notes the offer, in one MULTI.
   */
  async offer(stream: string, tally: string, key: string, proof: AnchorProof, nowMs: number): Promise<void> {
    const entry = JSON.stringify({ type: PROOF_ENTRY, key, status: proof.status, at: formatAnchoredAt(new Date(nowMs)), digest: proof.digest, proof });
    const res = await this.redis.multi().xadd(stream, '*', 'data', entry).zincrby(tally, 1, '~total').hset(this.offeredKey, key, `${proof.digest} ${nowMs}`).exec();
    for (const [err] of res ?? []) if (err) throw err;
  }

  /** The fan-out's hook `hook` answered 2xx for a change (the stream entry's JSON): a proof entry counts as its acknowledgement. */
  async acknowledge(hook: string, body: string): Promise<void> {
    let entry: { type?: unknown; key?: unknown; digest?: unknown };
    try {
      entry = JSON.parse(body) as typeof entry;
    } catch {
      return;
    }
    if (entry.type !== PROOF_ENTRY || typeof entry.key !== 'string' || typeof entry.digest !== 'string') return;
    await this.redis.hset(this.ackKey(hook), entry.key, entry.digest);
  }

  /** Drops the notes of subjects removed from Redis (left-overs name an old digest and never count). */
  async clear(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    const pipe = this.redis.pipeline();
    pipe.hdel(this.offeredKey, ...keys);
    for (const h of this.hooks) pipe.hdel(this.ackKey(h), ...keys);
    for (const [err] of (await pipe.exec()) ?? []) if (err) throw err;
  }
}
