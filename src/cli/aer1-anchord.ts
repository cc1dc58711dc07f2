#!/usr/bin/env node
import { runMain, UsageError } from './run.js';

await runMain('aer1-anchord', async () => {
  throw new UsageError('aer1-anchord is not built yet');
});
