/**
 * A real local Redis Cluster of three masters (no replicas) on free loopback ports, in a
 * temp folder, for the cluster tests; `stop()` ends the three redis-server children. The
 * bench starts the same one (bench/local-cluster.ts).
 */
import { startLocalCluster as start, type LocalCluster, type LocalClusterOptions } from '../../bench/local-cluster.js';
import { tempDir } from './harness.js';

export { askNode, type LocalCluster } from '../../bench/local-cluster.js';

export function startLocalCluster(opts: LocalClusterOptions = {}): Promise<LocalCluster> {
  return start(tempDir('cluster'), opts);
}
