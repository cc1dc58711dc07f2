// Child of stop-drop-spin.test.ts: a BullMQ worker takes a job scheduler's job, Redis freezes
// (SIGSTOP) as the worker upserts the scheduler's next iteration, the worker is told to close,
// the connection is dropped as Daemon.stop drops it past its grace, and Redis wakes (SIGCONT) and
// closes its end, which fails the command in flight. Prints a line and exits 0
// when timers still fire after the drop; a busy loop never gets there (the test kills it).
// `--plain` drops with ioredis's own disconnect() instead, to show the loop.
import { JobScheduler, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { dropConnection } from '../../dist/src/adapters/redis/connection.js';

const [url, pid] = process.argv.slice(2);
const plain = process.argv.includes('--plain');
const connection = new Redis(url, { maxRetriesPerRequest: null });
connection.on('error', () => undefined);
const prefix = '{spin}';
const queue = new Queue('spin', { connection, prefix });
await queue.upsertJobScheduler('s', { every: 60_000 }, { name: 's' });

let froze;
const frozen = new Promise((r) => (froze = r));
const upsert = JobScheduler.prototype.upsertJobScheduler;
let calls = 0;
JobScheduler.prototype.upsertJobScheduler = function (...args) {
  if (calls++ === 0) {
    process.kill(Number(pid), 'SIGSTOP');
    froze();
  }
  return upsert.apply(this, args);
};
const worker = new Worker('spin', async () => undefined, { connection, prefix });
worker.on('error', () => undefined);
await frozen;
void worker.close().catch(() => undefined);
await new Promise((r) => setTimeout(r, 300));
if (plain) connection.disconnect();
else dropConnection(connection);
// Redis wakes and closes its end: the command in flight fails, and the worker retries it
process.kill(Number(pid), 'SIGCONT');
await new Promise((r) => connection.once('end', r));
setTimeout(() => {
  console.log(`timer fired after the drop (${calls} upserts tried)`);
  process.exit(0);
}, 200);
