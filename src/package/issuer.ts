/**
 * The package's main entry (`import … from 'aer1-anchor'`): what an issuer calls to
 * enqueue a document the daemon anchors, and the proof format it gets back.
 */
export {
  enqueueAnchor,
  enqueueAnchors,
  bulkJobId,
  usableAsJobId,
  ANCHOR_JOB_OPTIONS,
  DEFAULT_MAX_SUBJECTS_PER_JOB,
  type EnqueueOutcome,
  type BulkEnqueueOutcome,
  type BulkEnqueueOptions,
} from '../adapters/queue/producer.js';
export { enqueueAnchorRouted, enqueueAnchorsRouted, shardTargets, type ShardTarget } from '../adapters/queue/routed-producer.js';
export { shardOf, shardPrefix, MAX_SHARDS } from '../core/shard/shard.js';
export type { BulkIntakeResult, BulkSubjectResult } from '../adapters/intake/intake.js';
export { ANCHOR_JOB } from '../adapters/bullmq/names.js';
export type { JobLimits } from '../adapters/intake/job-data.js';
export { AnchorStatusReader, type StatusReaderOptions, type StatusListQuery, type StatusCounts, type AnchorDetail, type AnchorSummary, type IntakeState, type SubjectStatus, type WitnessName } from './status-reader.js';
export type { KnownSubjects } from '../adapters/state/subjects.js';
export { Aer1Error, ConflictError, InputError } from '../core/errors/errors.js';
export * from '../core/proof/format.js';
