/**
 * How redis.cluster's URLs become a cluster client: credentials and TLS from the URLs go to
 * every node's connection, messages name the nodes without credentials, and a duplicate
 * (the live feed's, the HTTP server's fail-fast one) keeps both. Nothing listens on the
 * ports used here: the clients are made with no node to reach and closed at once.
 */
import { describe, expect, it } from 'vitest';
import { connectRedis, describeClient, duplicateClient, failFastOptions, isCluster } from '../../src/adapters/redis/connection.js';

describe('connectRedis({ cluster })', () => {
  it('gives every node the URL credentials and TLS, and names the nodes without them', () => {
    const c = connectRedis({ cluster: ['rediss://alice:p%40ss@127.0.0.1:1', 'rediss://alice:p%40ss@[::1]:2'] });
    c.on('error', () => undefined);
    try {
      expect(isCluster(c)).toBe(true);
      if (!isCluster(c)) return;
      expect(c.options.redisOptions).toMatchObject({ username: 'alice', password: 'p@ss', tls: {}, maxRetriesPerRequest: null });
      expect(describeClient(c)).toBe('Redis Cluster via 127.0.0.1:1, [::1]:2');
      expect(describeClient(c)).not.toContain('p@ss');

      const d = duplicateClient(c, failFastOptions(1500));
      d.on('error', () => undefined);
      try {
        if (!isCluster(d)) throw new Error('the duplicate of a cluster client is not a cluster client');
        // the offline queue is the cluster's; timeouts and retries go to each node
        expect(d.options.enableOfflineQueue).toBe(false);
        expect(d.options.redisOptions).toMatchObject({ username: 'alice', password: 'p@ss', tls: {}, commandTimeout: 1500, maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false });
        expect(describeClient(d)).toBe(describeClient(c));
      } finally {
        d.disconnect();
      }
    } finally {
      c.disconnect();
    }
  });

  it('keeps one Redis for a URL', () => {
    const r = connectRedis('redis://127.0.0.1:1');
    r.on('error', () => undefined);
    try {
      expect(isCluster(r)).toBe(false);
      expect(describeClient(r)).toBe('Redis at 127.0.0.1:1');
    } finally {
      r.disconnect();
    }
  });
});
