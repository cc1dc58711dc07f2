#!/usr/bin/env node
import { runMain } from './shared/run.js';
import { main } from '../daemon/main.js';

await runMain('aer1-anchord', main);
// Handles (Redis, sockets) are closed by now; make sure nothing keeps the process up.
process.exit(process.exitCode ?? 0);
