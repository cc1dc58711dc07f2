/**
 * A lease in Redis: one holder at a time across daemons for work that must not run twice at
 * once (a shard's anchor log publisher, a shard's webhook fan-out). The holder renews it
 * while it works; another daemon takes over only once it has expired (the holder died) or
 * was let go (a clean stop). A write that must come from the holder alone (`setWhileHeld`)
 * checks the lease and renews it in the same script, so a daemon that lost it writes nothing.
 */
import { randomBytes } from 'node:crypto';
import type { RedisClient } from './connection.js';

/** Takes or renews the lease: KEYS[1] the lease, ARGV[1] holder, ARGV[2] ms. 1 when held. */
const LEASE_HOLD = `local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
return 1`;
/** Lets the lease go when still ours. */
const LEASE_RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;
/** KEYS[2] = ARGV[3] and the lease renewed, only while KEYS[1] is held by ARGV[1]; 1 when written. */
const LEASE_SET = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
redis.call('SET', KEYS[2], ARGV[3])
return 1`;

type Script = (...args: (string | number)[]) => Promise<unknown>;

const SCRIPTS = { aer1_lease_hold: [LEASE_HOLD, 1], aer1_lease_release: [LEASE_RELEASE, 1], aer1_lease_set: [LEASE_SET, 2] } as const;

export class Lease {
  /** This holder's random name. */
  readonly holder = randomBytes(12).toString('hex');
  private readonly scripts: Record<keyof typeof SCRIPTS, Script>;

  /** `key` and every key written under it share one hash tag (one Redis Cluster slot). */
  constructor(
    private readonly redis: RedisClient,
    readonly key: string,
    readonly ms: number,
  ) {
    const commands = redis as unknown as Record<string, Script | undefined>;
    for (const [name, [lua, numberOfKeys]] of Object.entries(SCRIPTS)) {
      if (typeof commands[name] !== 'function') redis.defineCommand(name, { lua, numberOfKeys });
    }
    const bound = (name: keyof typeof SCRIPTS): Script => commands[name]!.bind(redis);
    this.scripts = { aer1_lease_hold: bound('aer1_lease_hold'), aer1_lease_release: bound('aer1_lease_release'), aer1_lease_set: bound('aer1_lease_set') };
  }

  /** Takes the lease, or renews it when ours; false when another holder has it. */
  async hold(): Promise<boolean> {
    return Number(await this.scripts.aer1_lease_hold(this.key, this.holder, this.ms)) === 1;
  }

  /** Sets `key` to `value` and renews the lease, only while it is ours; false (nothing written) when it is not. */
  async setWhileHeld(key: string, value: string): Promise<boolean> {
    return Number(await this.scripts.aer1_lease_set(this.key, key, this.holder, this.ms, value)) === 1;
  }

  /** Lets the lease go when it is still ours, so another daemon takes over at once. */
  async release(): Promise<void> {
    await this.scripts.aer1_lease_release(this.key, this.holder);
  }
}
