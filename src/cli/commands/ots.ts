import { UsageError } from '../run.js';

export const summary = '(not built yet)';

export async function run(_argv: string[]): Promise<number> {
  throw new UsageError('aer1-anchor ots is not built yet');
}
