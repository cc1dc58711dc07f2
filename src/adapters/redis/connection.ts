/**
 * Where the daemon's Redis is: `redis.cluster` (a Redis Cluster, through ioredis `Cluster`)
 * or `REDIS_URL` / redis.url when set; otherwise 127.0.0.1:6379 when something answers
 * there; otherwise an embedded redis-server child (see embedded-redis.ts).
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { createConnection } from 'node:net';

/** A connection to one Redis or to a Redis Cluster: the state store, BullMQ and the feeds take either. */
export type RedisClient = Redis | Cluster;

/** One Redis (a URL) or the startup nodes of a Redis Cluster (redis.cluster). */
export type RedisTarget = string | { cluster: readonly string[] };

export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster;
}

/** `redis://[user:pass@]host:port` → ioredis startup node and the node options its userinfo and scheme give. */
function clusterNodes(urls: readonly string[]): { nodes: Array<{ host: string; port: number }>; redisOptions: RedisOptions } {
  const redisOptions: RedisOptions = {};
  const nodes = urls.map((text) => {
    const u = new URL(text);
    if (u.username !== '') redisOptions.username = decodeURIComponent(u.username);
    if (u.password !== '') redisOptions.password = decodeURIComponent(u.password);
    if (u.protocol === 'rediss:') redisOptions.tls = {};
    return { host: u.hostname.replace(/^\[|\]$/g, ''), port: u.port === '' ? 6379 : Number(u.port) };
  });
  return { nodes, redisOptions };
}

export function connectRedis(target: RedisTarget, opts: { autoPipelining?: boolean } = {}): RedisClient {
  // Auto-pipelining batches the many small commands of concurrent jobs into one write; it is
  // for the state store's connection only, never for one BullMQ blocks on.
  const enableAutoPipelining = opts.autoPipelining === true;
  if (typeof target === 'string') return new Redis(target, { maxRetriesPerRequest: null, enableAutoPipelining });
  const { nodes, redisOptions } = clusterNodes(target.cluster);
  // BullMQ blocks on its workers' connections: maxRetriesPerRequest null on every node, as for one Redis
  // No ready check (CLUSTER INFO): one failing while a master is down makes ioredis reconnect and
  // leaves the connect() promise it started unsettled for ever, and BullMQ's blocking connection
  // awaits that promise (a worker that never takes a job again; redis/ioredis#741). Commands meeting CLUSTERDOWN
  // are retried by the cluster client instead.
  const cluster = new Cluster(nodes, { enableAutoPipelining, enableReadyCheck: false, redisOptions: { ...redisOptions, maxRetriesPerRequest: null } });
  clusterNames.set(cluster, nodes.map((n) => `${n.host.includes(':') ? `[${n.host}]` : n.host}:${n.port}`));
  return cluster;
}

/** The startup nodes of each cluster connection made here, for messages (ioredis keeps its own private). */
const clusterNames = new WeakMap<Cluster, string[]>();

/**
 * For a connection that requests wait on: a command fails rather than waits. None is queued
 * while the connection is down or re-sent after a reconnect (a write a client was told 503 for
 * must not land later), and each gives up after `timeoutMs`.
 */
export function failFastOptions(timeoutMs: number): RedisOptions {
  return { enableOfflineQueue: false, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0, commandTimeout: timeoutMs, enableAutoPipelining: true };
}

/**
 * A second connection to the same Redis or Cluster (a blocking reader must have its own),
 * with `overrides` applied: on a cluster, the offline queue and auto-pipelining are the
 * cluster's and the rest goes to each node's connection.
 */
export function duplicateClient(client: RedisClient, overrides: RedisOptions = {}): RedisClient {
  if (!isCluster(client)) return client.duplicate(overrides);
  const { enableOfflineQueue, enableAutoPipelining, ...node } = overrides;
  const clusterOverrides: Partial<ClusterOptions> = { redisOptions: { ...client.options.redisOptions, ...node } };
  if (enableOfflineQueue !== undefined) clusterOverrides.enableOfflineQueue = enableOfflineQueue;
  if (enableAutoPipelining !== undefined) clusterOverrides.enableAutoPipelining = enableAutoPipelining;
  const copy = client.duplicate([], clusterOverrides);
  const names = clusterNames.get(client);
  if (names) clusterNames.set(copy, names);
  return copy;
}

/** Where a connection points, for people: `Redis at host:port` or `Redis Cluster via host:port, ...`. */
export function describeClient(client: RedisClient): string {
  if (!isCluster(client)) return `Redis at ${client.options.host}:${client.options.port}`;
  return `Redis Cluster via ${(clusterNames.get(client) ?? ['(startup nodes unknown)']).join(', ')}`;
}

/** True when something on host:port answers a Redis PING within `timeoutMs`. */
export function redisAnswers(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    let buf = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      buf += d.toString('latin1');
      if (buf.includes('\r\n')) done(buf.startsWith('+PONG') || buf.startsWith('-NOAUTH'));
    });
  });
}

/** What every command on a dropped connection fails with (`dropConnection`). */
export class ConnectionDroppedError extends Error {
  constructor() {
    super('the connection was dropped by a stop');
    this.name = 'ConnectionDroppedError';
  }
}

/**
 * Drops a connection for good, as a stop does past its grace: what is in flight or queued
 * fails, and every later command fails at once, all with ConnectionDroppedError. Never
 * ioredis's "Connection is closed.": a BullMQ worker retries that one for ever and, once
 * closing, without a delay (a busy loop that starves every timer, the stop's bound included).
 */
export function dropConnection(client: RedisClient): void {
  const refuse = (command: { reject: (err: Error) => void; promise: Promise<unknown> }): Promise<unknown> => {
    command.reject(new ConnectionDroppedError());
    return command.promise;
  };
  type Flushable = { flushQueue(err: Error): void; sendCommand: typeof refuse };
  const parts: Flushable[] = [client as unknown as Flushable];
  // a cluster's commands in flight wait in its nodes' queues
  if (isCluster(client)) parts.push(...(client.nodes() as unknown as Flushable[]));
  for (const c of parts) {
    c.sendCommand = refuse;
    c.flushQueue(new ConnectionDroppedError());
  }
  client.disconnect();
}
