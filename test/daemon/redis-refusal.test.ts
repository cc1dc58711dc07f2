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

  // issue 29: ioredis's cluster client wraps Redis's words; every HTTP path answered 500 on these
  it.each([
    ['Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down', 'busy', 'CLUSTERDOWN The cluster is down'],
    ['Too many Cluster redirections. Last error: Error: Connection is closed.', 'unavailable', 'Connection is closed.'],
    ['Too many Cluster redirections. Last error: ReplyError: TRYAGAIN Multiple keys request during rehashing of slot', 'busy', 'TRYAGAIN Multiple keys request during rehashing of slot'],
    ['Too many Cluster redirections. Last error: ReplyError: MOVED 5798 127.0.0.1:7001', 'unavailable', 'MOVED 5798 127.0.0.1:7001'],
    ['Too many Cluster redirections. Last error: ReplyError: ASK 5798 127.0.0.1:7001', 'unavailable', 'ASK 5798 127.0.0.1:7001'],
    ["Too many Cluster redirections. Last error: ReplyError: OOM command not allowed when used memory > 'maxmemory'.", 'out_of_memory', "OOM command not allowed when used memory > 'maxmemory'."],
    ["Too many Cluster redirections. Last error: ReplyError: READONLY You can't write against a read only replica.", 'read_only', "READONLY You can't write against a read only replica."],
    ['Too many Cluster redirections. Last error: ReplyError: LOADING Redis is loading the dataset in memory', 'busy', 'LOADING Redis is loading the dataset in memory'],
    ['Too many Cluster redirections. Last error: ReplyError: MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to \'no\'.', 'busy', "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."],
    ['ReplyError: CLUSTERDOWN Hash slot not served', 'busy', 'CLUSTERDOWN Hash slot not served'],
    ['None of startup nodes is available', 'unavailable', 'None of startup nodes is available'],
    ['Cluster is disconnected.', 'unavailable', 'Cluster is disconnected.'],
    ['Failed to refresh slots cache.', 'unavailable', 'Failed to refresh slots cache.'],
    ["Failed to add repeatable job for next iteration: OOM command not allowed when used memory > 'maxmemory'. script: 568868f89f8cc74c44032e07ce9c50c09e60bd17, on @user_script:315.", 'out_of_memory', "OOM command not allowed when used memory > 'maxmemory'."],
  ])('wrapped: %s → %s', (message, kind, detail) => {
    const r = redisRefusal(new Error(message));
    expect(r).toMatchObject({ kind });
    expect(r!.detail).toBe(detail);
  });

  it('finds the refusal in the error a wrapper carries (lastNodeError, cause, AggregateError)', () => {
    const withLast = Object.assign(new Error('Too many Cluster redirections. Last error: [object Object]'), { lastNodeError: new Error('CLUSTERDOWN The cluster is down') });
    expect(redisRefusal(withLast)).toMatchObject({ kind: 'busy' });
    expect(redisRefusal(new Error('job failed', { cause: new Error("OOM command not allowed when used memory > 'maxmemory'.") }))).toMatchObject({ kind: 'out_of_memory', writesRefused: true });
    expect(redisRefusal(new AggregateError([new Error('nothing'), new Error('connect ECONNREFUSED 127.0.0.1:7000')], 'all failed'))).toMatchObject({ kind: 'unavailable' });
    // the state's refusal wins over a dropped connection it came with
    expect(redisRefusal(new AggregateError([new Error('Connection is closed.'), new Error('READONLY no')]))).toMatchObject({ kind: 'read_only' });
  });

  it('does not take a word inside other text for a refusal', () => {
    for (const message of ['ERR the OOM killer is not ours', 'Too many Cluster redirections. Last error: ReplyError: WRONGTYPE Operation against a key', 'input: field "CLUSTERDOWN" is unknown', 'invalid MOVED header']) {
      expect(redisRefusal(new Error(message)), message).toBeNull();
    }
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
