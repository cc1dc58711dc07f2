#!/usr/bin/env node
import { runMain } from './shared/run.js';
import { run } from './commands/verify-anchor.js';

await runMain('aer1-verify-anchor', run);
