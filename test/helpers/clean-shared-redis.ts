/**
 * A vitest setup file: after each test file, the keys of every prefix it took from
 * uniquePrefix() are deleted from the shared Redis (see shared-redis.ts).
 */
import { afterAll } from 'vitest';
import { cleanIssuedPrefixes } from './shared-redis.js';

afterAll(async () => {
  await cleanIssuedPrefixes();
});
