/** The webhookDelivery.* keys: defaults, environment, and errors that name the key. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/adapters/config/config.js';

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  return '';
}

describe('webhookDelivery', () => {
  it('defaults to retrying for 3 days, from 1 s doubling to 60 s, one POST per hook at a time', () => {
    expect(loadConfig({ env: {} }).webhookDelivery).toEqual({ retryHorizonMs: 259_200_000, backoffMs: 1000, backoffMaxMs: 60_000, timeoutMs: 10_000, concurrency: 1 });
  });

  it('is read from the environment and refuses bad values naming the key', () => {
    const c = loadConfig({ env: { AER1_WEBHOOK_RETRY_HORIZON_MS: '3600000', AER1_WEBHOOK_CONCURRENCY: '4' } });
    expect(c.webhookDelivery).toMatchObject({ retryHorizonMs: 3_600_000, concurrency: 4 });
    expect(errorOf(() => loadConfig({ env: { AER1_WEBHOOK_RETRY_HORIZON_MS: '3 days' } }))).toMatch(/^config webhookDelivery\.retryHorizonMs: AER1_WEBHOOK_RETRY_HORIZON_MS must be an integer/);
    expect(errorOf(() => loadConfig({ env: {}, overrides: { webhookDelivery: { concurrency: 0 } } }))).toMatch(/^config webhookDelivery\.concurrency: /);
    expect(errorOf(() => loadConfig({ env: {}, overrides: { webhookDelivery: { backoffMs: 5000, backoffMaxMs: 1000 } } }))).toBe('config webhookDelivery.backoffMaxMs: must be at least webhookDelivery.backoffMs');
    expect(errorOf(() => loadConfig({ env: {}, overrides: { webhookDelivery: { retries: 3 } } }))).toMatch(/^config webhookDelivery\.retries: unknown key/);
  });
});
