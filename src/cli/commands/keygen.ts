import { UsageError } from '../run.js';

export const summary = '(not built yet)';

export async function run(_argv: string[]): Promise<number> {
  throw new UsageError('aer1-anchor keygen is not built yet');
}
