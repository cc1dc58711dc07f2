/**
 * Which Redis errors are Redis's state rather than a fault of ours: the words Redis and
 * ioredis actually use (the OOM and READONLY texts are what BullMQ's addJob script got from
 * a private redis-server 7 in test/reliability/redis-backpressure.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { describeRefusal, redisRefusal } from '../../src/adapters/redis/redis-refusal.js';

describe('redisRefusal', () => {
  it.each([
    ["OOM command not allowed when used memory > 'maxmemory'. script: 808626431266f2e834f108cac6b35ce556927132, on @user_script:507.", 'out_of_memory', true, false],
    ["READONLY You can't write against a read only replica.", 'read_only', true, false],
    ['MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk.', 'not_persisting', true, false],
    ['LOADING Redis is loading the dataset in memory', 'busy', false, false],
    ['BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.', 'busy', false, false],
    ['Command timed out', 'timeout', false, true],
    ["Stream isn't writeable and enableOfflineQueue options is false", 'unavailable', false, false],
    ['Connection is closed.', 'unavailable', false, true],
    ['Reached the max retries per request limit (which is 0). Refer to "maxRetriesPerRequest" option for details.', 'unavailable', false, true],
  ])('%s → %s', (message, kind, writesRefused, maybeApplied) => {
    expect(redisRefusal(new Error(message))).toMatchObject({ kind, writesRefused, maybeApplied });
  });

  it('is null for errors that are ours or the request\'s', () => {
    for (const message of ['WRONGTYPE Operation against a key holding the wrong kind of value', 'ERR unknown command', "Cannot read properties of undefined (reading 'x')", 'NOSCRIPT No matching script']) {
      expect(redisRefusal(new Error(message)), message).toBeNull();
    }
    expect(redisRefusal('OOM as a string')).toBeNull();
  });

  it('says what happened in one bounded line, without the script sha', () => {
    const oom = redisRefusal(new Error(`OOM command not allowed when used memory > 'maxmemory'. script: ${'a'.repeat(40)}, on @user_script:9.`))!;
    expect(describeRefusal(oom, 2500)).toBe("Redis refuses writes: it is out of memory (maxmemory reached, noeviction): OOM command not allowed when used memory > 'maxmemory'.");
    expect(describeRefusal(redisRefusal(new Error('Command timed out'))!, 2500)).toBe('Redis did not answer within 2500 ms (http.redisTimeoutMs)');
    const down = redisRefusal(new Error("Stream isn't writeable and enableOfflineQueue options is false"))!;
    expect(describeRefusal(down, 2500)).toBe('Redis is unreachable: not connected (the connection is down or being re-established)');
    const dropped = redisRefusal(new Error('Reached the max retries per request limit (which is 0). Refer to "maxRetriesPerRequest" option for details.'))!;
    expect(describeRefusal(dropped, 2500)).toBe('Redis is unreachable: the connection dropped while a command waited for its answer');
    const long = redisRefusal(new Error(`READONLY ${'x'.repeat(5000)}\nsecond line`))!;
    expect(long.detail.length).toBeLessThanOrEqual(201);
    expect(long.detail).not.toContain('second line');
  });
});
