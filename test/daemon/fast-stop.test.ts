/**
 * A daemon stopped a few milliseconds after it started (a deploy that is rolled back at
 * once, a SIGTERM during start-up) closes every connection cleanly: no unhandled rejection,
 * which on Node 20 would crash the process with exit 1 instead of 0.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { startCalendars, startDaemon, startRelays, tempDir, testConfig } from '../helpers/harness.js';

it('stops cleanly right after starting, five times in a row', { timeout: 60_000 }, async () => {
  const unhandled: unknown[] = [];
  const record = (e: unknown): void => {
    unhandled.push(e);
  };
  process.on('unhandledRejection', record);
  const relays = await startRelays(1);
  const headersFile = join(tempDir('headers'), 'headers.json');
  const calendars = await startCalendars(1, headersFile);
  try {
    for (let i = 0; i < 5; i++) {
      const daemon = await startDaemon(testConfig({ relays, calendars, headersFile }));
      await new Promise((r) => setTimeout(r, 8));
      await daemon.stop();
    }
    // Rejections surface on later ticks: give them time to appear.
    await new Promise((r) => setTimeout(r, 1000));
  } finally {
    process.off('unhandledRejection', record);
    await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
  }
  expect(unhandled.map((e) => (e as Error).message)).toEqual([]);
});
