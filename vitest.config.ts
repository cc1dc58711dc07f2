import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // after each file, delete the keys its unique prefixes left in the shared Redis; each file
    // gets its own TMPDIR and fails when it leaves anything there
    setupFiles: ['test/helpers/clean-shared-redis.ts', 'test/helpers/temp-folders.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration suites start their own Redis, relays and calendars on free ports;
    // two cores: keep files from starving each other.
    maxWorkers: 2,
    fileParallelism: true,
  },
});
