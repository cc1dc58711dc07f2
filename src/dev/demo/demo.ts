/**
 * `aer1-anchor demo`: the whole product on loopback in well under a minute. Starts the
 * stack (../stack/stack.ts), anchors a receipt, a workflow close and a job timeline, shows them
 * move through their states, mines a regtest block on each dev calendar, waits for
 * Bitcoin confirmation, writes every subject with its proof attached (plus the `.ots`
 * files and the headers file), verifies each with the verifier's pipeline, cuts the
 * workflow's last step and shows the verifier naming the truncation, then stops
 * everything it started and checks that no port still answers.
 */
import { writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Aer1Error } from '../../core/errors/errors.js';
import { ProofExporter } from '../../adapters/proof/export.js';
import type { AnchorProof } from '../../core/proof/format.js';
import { parseNote, parseVerifierKey } from '../../core/log/note.js';
import { parseTsaTrustAnchors } from '../../core/tsa/index.js';
import { parseWitnessKey } from '../../core/witness/cosignature.js';
import { ANCHOR_JOB } from '../../adapters/bullmq/names.js';
import { ANCHOR_JOB_OPTIONS } from '../../adapters/queue/producer.js';
import { subjectDetail, type AnchorDetail as SubjectView } from '../../adapters/state/subject-view.js';
import { BitcoinCheckCache } from '../../core/verify/bitcoin.js';
import { EventCheckCache } from '../../core/verify/nostr.js';
import { verifyAnchor, type Verdict, type VerifyOptions, type VerifyReport } from '../../core/verify/pipeline.js';
import { reportJson, type ReportJson } from '../../core/verify/report.js';
import { HeadersFileSource } from '../../adapters/bitcoin/sources.js';
import type { MineResult } from '../calendar/index.js';
import { cutLastStep, mintDocuments, type DemoDocuments, type WorkflowDocument } from './documents.js';
import { ProgressDisplay, type ProgressOutput, type SubjectState } from './progress.js';
import { portAnswers, startStack, type DevStack } from '../stack/stack.js';


/** How the demo fails (its exit 1). */
export const DEMO_ERROR_CODES = ['demo_failed', 'demo_timeout', 'demo_leak'] as const;
export type DemoErrorCode = (typeof DEMO_ERROR_CODES)[number];

export class DemoError extends Aer1Error {
  declare readonly code: DemoErrorCode;
  constructor(code: DemoErrorCode, message: string) {
    super(code, message);
  }
}

/** Bounds of the two waits; the demo itself takes seconds. */
const SUBMIT_TIMEOUT_MS = 30_000;
const CONFIRM_TIMEOUT_MS = 30_000;
const POLL_MS = 100;

export interface DemoOptions {
  /** Folder the files are written to (created by the caller). */
  out: string;
  /** Where the human-readable progress goes. */
  progress: ProgressOutput;
  now?: () => number;
}

type Label = 'receipt' | 'workflow' | 'timeline';

interface DemoSubject {
  label: Label;
  kind: 'receipt' | 'workflow-close' | 'chain-head';
  key: string;
  document: Record<string, unknown>;
  file: string;
  otsFile: string;
  via: 'bullmq' | 'http';
  describe: string;
}

/** The verifier's `--json` result for one file, and the command that reproduces it. */
export type VerificationSummary = ReportJson & { command: string };

export interface SubjectSummary {
  label: Label;
  kind: string;
  key: string;
  digest: string | null;
  enqueued_via: string;
  status: string;
  witnesses: { nostr: string | null; ots: string | null };
  /** ms from the start of the demo until the subject was first seen in each overall status. */
  reached_ms: Record<string, number>;
  history: SubjectView['history'];
  files: { document: string; ots: string | null };
  bitcoin: { height: number; block_hash: string; time: number } | null;
  verify: VerificationSummary | null;
}

export interface DemoSummary {
  ok: boolean;
  error: string | null;
  out: string;
  total_ms: number;
  /** ms from the start of the demo at which each phase ended. */
  timings_ms: Record<string, number>;
  signer: { pubkey: string; npub: string } | null;
  /** The anchor log the demo's daemon wrote: its origin, verifier key and folder (under out). */
  log: { origin: string; vkey: string; dir: string } | null;
  /** The dev TSA's CA certificate (PEM), for `aer1-verify-anchor --tsa-ca`. */
  tsa_ca: string | null;
  /** The dev witnesses' verifier keys `<name>+<hash>+<base64(0x04 ‖ key)>`, for `--witness`. */
  witnesses: string[];
  services: {
    redis: string | null;
    relays: string[];
    calendars: string[];
    http: string | null;
    ports: number[];
    /** True when, after stopping, none of those ports accepts a connection. */
    ports_closed: boolean | null;
  };
  blocks: Array<{ calendar: string; height: number; block_hash: string }>;
  subjects: SubjectSummary[];
  truncation: {
    file: string;
    steps_anchored: number;
    steps_in_file: number;
    verdict: Verdict;
    reason: string;
    /** The failing check that names the truncation, when one does. */
    check: { name: string; status: string; detail: string } | null;
    named_truncation: boolean;
  } | null;
  files: string[];
}

function relativeName(out: string, file: string): string {
  return file.startsWith(`${out}/`) ? file.slice(out.length + 1) : file;
}

function stateOf(label: string, view: SubjectView | null): SubjectState {
  const n = view?.witnesses.nostr;
  const o = view?.witnesses.ots;
  const accepted = n ? n.relays.filter((r) => r.status === 'accepted' || r.status === 'stored').length : 0;
  const answered = o ? o.calendars.filter((c) => c.status === 'pending' || c.status === 'confirmed').length : 0;
  return {
    label,
    status: view?.status ?? 'queued',
    nostr: n?.status ?? '-',
    ots: o?.status ?? '-',
    nostrDetail: n ? `${accepted}/${n.relays.length} relays` : '',
    otsDetail: o ? `${answered}/${o.calendars.length} calendars${o.bitcoin ? `, block ${o.bitcoin.height}` : ''}` : '',
  };
}

class Run {
  readonly started: number;
  readonly now: () => number;
  readonly display: ProgressDisplay;
  readonly summary: DemoSummary;
  readonly views = new Map<string, SubjectView | null>();

  constructor(readonly opts: DemoOptions) {
    this.now = opts.now ?? Date.now;
    this.started = this.now();
    this.display = new ProgressDisplay(opts.progress, this.started, this.now);
    this.summary = {
      ok: false, error: null, out: opts.out, total_ms: 0, timings_ms: {}, signer: null, log: null, tsa_ca: null, witnesses: [],
      services: { redis: null, relays: [], calendars: [], http: null, ports: [], ports_closed: null },
      blocks: [], subjects: [], truncation: null, files: [],
    };
  }

  elapsed(): number {
    return this.now() - this.started;
  }

  /** One line of the human-readable progress. */
  show(text: string): void {
    this.display.line(text);
  }

  mark(phase: string): void {
    this.summary.timings_ms[phase] = this.elapsed();
  }

  write(file: string, content: string | Buffer): string {
    writeFileSync(file, content);
    this.summary.files.push(file);
    return file;
  }
}

async function refresh(run: Run, stack: DevStack, subjects: readonly DemoSubject[], summaries: Map<string, SubjectSummary>): Promise<void> {
  for (const s of subjects) {
    const view = await subjectDetail(stack.running.daemon.store, stack.config, s.key);
    run.views.set(s.key, view);
    const summary = summaries.get(s.key)!;
    if (view) {
      summary.status = view.status;
      summary.digest = view.digest;
      summary.witnesses = { nostr: view.witnesses.nostr?.status ?? null, ots: view.witnesses.ots?.status ?? null };
      summary.history = view.history;
      summary.reached_ms[view.status] ??= run.elapsed();
      if (view.status === 'rejected' || view.status === 'failed') {
        throw new DemoError('demo_failed', `${s.label} ${s.key} is ${view.status}${view.reason ? `: ${view.reason}` : ''}`);
      }
    }
  }
  run.display.update(subjects.map((s) => stateOf(s.label, run.views.get(s.key) ?? null)));
}

/** Polls until `done` holds for every subject; bounded in time and count. */
async function waitUntil(
  run: Run, stack: DevStack, subjects: readonly DemoSubject[], summaries: Map<string, SubjectSummary>,
  what: string, done: (view: SubjectView | null) => boolean, timeoutMs: number,
): Promise<void> {
  const deadline = run.now() + timeoutMs;
  for (let i = 0; i <= Math.ceil(timeoutMs / POLL_MS); i++) {
    await refresh(run, stack, subjects, summaries);
    if (subjects.every((s) => done(run.views.get(s.key) ?? null))) return;
    if (run.now() > deadline) break;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  const stuck = subjects
    .filter((s) => !done(run.views.get(s.key) ?? null))
    .map((s) => {
      const st = stateOf(s.label, run.views.get(s.key) ?? null);
      return `${s.label} ${st.status} (nostr ${st.nostr} ${st.nostrDetail}, ots ${st.ots} ${st.otsDetail})`;
    });
  throw new DemoError('demo_timeout', `no ${what} within ${timeoutMs / 1000} s: ${stuck.join('; ')} (daemon log: ${stack.files.log})`);
}

async function enqueue(stack: DevStack, subjects: readonly DemoSubject[]): Promise<void> {
  // As an issuer in Node would: its own BullMQ connection, same queue, job name, prefix and options.
  const queue = new Queue(stack.config.queue.name, {
    connection: { host: '127.0.0.1', port: stack.redis.port, maxRetriesPerRequest: null },
    prefix: stack.running.daemon.store.keys.bullPrefix,
  });
  try {
    for (const s of subjects.filter((x) => x.via === 'bullmq')) {
      await queue.add(ANCHOR_JOB, s.document, { jobId: s.key, ...ANCHOR_JOB_OPTIONS });
    }
  } finally {
    await queue.close();
  }
  for (const s of subjects.filter((x) => x.via === 'http')) {
    const res = await fetch(`${stack.running.httpUrl}/v1/anchors`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(s.document),
    });
    const text = await res.text();
    if (res.status !== 202) throw new DemoError('demo_failed', `POST /v1/anchors for the ${s.label} answered ${res.status}: ${text.slice(0, 300)}`);
  }
}

function verifyCommand(stack: DevStack, file: string): string {
  const witnesses = stack.witnesses.map((w) => ` --witness ${w.verifierKey}`).join('');
  return `aer1-verify-anchor ${file} --headers ${stack.files.headers} --network regtest --expected-pubkey ${stack.pubkey} --log-key ${logVkey(stack)} --tsa-ca ${stack.files.tsaCa}${witnesses}`;
}

/** The stack's anchor log verifier key (the daemon printed it at start). */
function logVkey(stack: DevStack): string {
  return stack.running.daemon.anchorLogs[0]!.verifierKey;
}

async function verifyFile(file: string, options: VerifyOptions): Promise<VerifyReport> {
  return verifyAnchor({ value: JSON.parse(readFileSync(file, 'utf8')) as unknown }, options);
}

function summarizeReport(report: VerifyReport, file: string, command: string): VerificationSummary {
  return { ...reportJson(file, report), command };
}

async function stopAndCheck(run: Run, stack: DevStack): Promise<void> {
  const ports = stack.ports();
  await stack.stop();
  const answering: number[] = [];
  for (const port of ports) if (await portAnswers(port)) answering.push(port);
  run.summary.services.ports_closed = answering.length === 0;
  run.mark('stopped');
  if (answering.length) throw new DemoError('demo_leak', `ports still answering after stop: ${answering.join(', ')}`);
  run.display.line(`Stopped everything the demo started: redis-server, ${stack.relays.length} relays, ${stack.calendars.length} calendars, the daemon and its HTTP server (${ports.length} ports, none answering now).`);
}

export async function runDemo(opts: DemoOptions): Promise<DemoSummary> {
  const run = new Run(opts);
  let stack: DevStack | null = null;
  try {
    stack = await startServices(run);
    const started = stack;
    const docs = mintDocuments();
    const subjects = demoSubjects(opts.out, docs);
    const summaries = subjectSummaries(subjects);
    run.summary.subjects = [...summaries.values()];
    await anchor(run, stack, subjects);
    await witness(run, stack, subjects, summaries);
    const proofs = await writeProofs(run, stack, subjects, summaries);
    const options = verifyOptions(stack);
    await verifyAll(run, stack, subjects, summaries, options);
    const truncation = await checkTruncation(run, docs.workflow, proofs.get(docs.workflow.receipt_id), options);
    stack = null;
    await stopAndCheck(run, started);
    const allPass = run.summary.subjects.every((s) => s.verify?.verdict === 'PASS' && s.status === 'confirmed');
    run.summary.ok = allPass && truncation.named_truncation && run.summary.services.ports_closed === true;
    if (!run.summary.ok) run.summary.error = 'an outcome differs from what the demo expects (see subjects[].verify and truncation)';
  } catch (err) {
    run.display.finish();
    run.summary.ok = false;
    run.summary.error = err instanceof Error ? err.message : String(err);
    if (stack) {
      const leftover = stack;
      stack = null;
      await stopAndCheck(run, leftover).catch((e: unknown) => {
        run.summary.error += `; while stopping: ${e instanceof Error ? e.message : String(e)}`;
      });
    }
  }
  run.summary.total_ms = run.elapsed();
  return run.summary;
}

/** Starts the stack and says what runs where. */
async function startServices(run: Run): Promise<DevStack> {
  const { out } = run.opts;
  run.show(`aer1-anchor demo: the whole product on loopback, offline, nothing configured. Output: ${out}`);
  run.show('');
  run.show('Starting a private redis-server, 3 dev Nostr relays, 2 dev OpenTimestamps calendars (regtest) and the daemon...');
  const stack = await startStack(out);
  run.summary.signer = { pubkey: stack.pubkey, npub: stack.npub };
  const anchorLog = stack.running.daemon.anchorLogs[0]!;
  run.summary.log = { origin: anchorLog.origin, vkey: anchorLog.verifierKey, dir: anchorLog.dir };
  run.summary.tsa_ca = stack.files.tsaCa;
  run.summary.witnesses = stack.witnesses.map((w) => w.verifierKey);
  run.summary.services = {
    redis: stack.redis.url,
    relays: stack.relays.map((r) => r.url),
    calendars: stack.calendars.map((c) => c.url),
    http: stack.running.httpUrl,
    ports: stack.ports(),
    ports_closed: null,
  };
  run.summary.files.push(stack.files.key, stack.files.log, stack.files.headers, stack.files.logKey, stack.files.tsaCa);
  run.mark('started');
  run.show(`  redis      ${stack.redis.url} (private; data in a temporary folder, removed at the end)`);
  run.show(`  relays     ${stack.relays.map((r) => r.url).join(', ')} (quorum: all 3)`);
  run.show(`  calendars  ${stack.calendars.map((c) => c.url).join(', ')} (m = 2 of 2)`);
  run.show(`  signer     ${stack.npub} (throwaway key: ${relativeName(out, stack.files.key)})`);
  run.show(`  status     ${stack.running.httpUrl}/ (open it in a browser while the demo runs)`);
  run.show(`  daemon log ${relativeName(out, stack.files.log)}`);
  run.show(`  anchor log ${relativeName(out, anchorLog.dir)}/ (${anchorLog.origin}, verifier key ${anchorLog.verifierKey})`);
  run.show(`  TSA        ${stack.tsa.url} (dev RFC 3161 TSA; its CA: ${relativeName(out, stack.files.tsaCa)})`);
  run.show(`  witnesses  ${stack.witnesses.map((w) => w.url).join(', ')} (dev C2SP witnesses: ${stack.witnesses.map((w) => w.verifierKey).join(', ')})`);
  run.show('');
  return stack;
}

function demoSubjects(out: string, docs: DemoDocuments): DemoSubject[] {
  return [
    { label: 'receipt', kind: 'receipt', key: docs.receipt.id as string, document: docs.receipt, file: join(out, 'receipt.json'), otsFile: join(out, 'receipt.ots'), via: 'bullmq', describe: 'a receipt (output_hash over its canonical_bytes)' },
    { label: 'workflow', kind: 'workflow-close', key: docs.workflow.receipt_id, document: docs.workflow, file: join(out, 'workflow.json'), otsFile: join(out, 'workflow.ots'), via: 'bullmq', describe: `a workflow close, ${docs.workflow.steps.length} steps (receipt-id-v0 merkle_root)` },
    { label: 'timeline', kind: 'chain-head', key: docs.timeline.job_id, document: docs.timeline, file: join(out, 'timeline.json'), otsFile: join(out, 'timeline.ots'), via: 'http', describe: `a job timeline, ${docs.timeline.entries.length} entries (chain head)` },
  ];
}

function subjectSummaries(subjects: readonly DemoSubject[]): Map<string, SubjectSummary> {
  return new Map<string, SubjectSummary>(subjects.map((s) => [s.key, {
    label: s.label, kind: s.kind, key: s.key, digest: null, enqueued_via: s.via === 'bullmq' ? 'BullMQ queue' : 'POST /v1/anchors',
    status: 'queued', witnesses: { nostr: null, ots: null }, reached_ms: {}, history: [],
    files: { document: s.file, ots: null }, bitcoin: null, verify: null,
  }]));
}

/** Says how each subject goes in, then sends it. */
async function anchor(run: Run, stack: DevStack, subjects: readonly DemoSubject[]): Promise<void> {
  run.show('Anchoring:');
  for (const s of subjects) {
    run.show(`  ${s.label.padEnd(9)} ${s.key}  ${s.describe}, via ${s.via === 'bullmq' ? `BullMQ (queue ${stack.config.queue.name}, job ${ANCHOR_JOB}, jobId = key)` : 'POST /v1/anchors (bearer token)'}`);
  }
  await enqueue(stack, subjects);
  run.mark('enqueued');
}

/** Waits for both calendars to hold every subject, mines a block on each, waits for Bitcoin confirmation. */
async function witness(run: Run, stack: DevStack, subjects: readonly DemoSubject[], summaries: Map<string, SubjectSummary>): Promise<void> {
  const otsSubmitted = (v: SubjectView | null): boolean => (v?.witnesses.ots?.calendars ?? []).length > 0 && v!.witnesses.ots!.calendars.every((c) => c.status === 'pending');
  await waitUntil(run, stack, subjects, summaries, 'submission to both calendars', otsSubmitted, SUBMIT_TIMEOUT_MS);
  run.mark('ots_pending');
  await mineBlocks(run, stack);
  await waitUntil(run, stack, subjects, summaries, 'Bitcoin confirmation', (v) => v?.status === 'confirmed', CONFIRM_TIMEOUT_MS);
  run.mark('confirmed');
  run.display.finish();
  run.show(`All confirmed after ${(run.elapsed() / 1000).toFixed(1)} s: 3/3 relays accepted each event, a verified Bitcoin attestation for each.`);
  run.show('');
}

async function mineBlocks(run: Run, stack: DevStack): Promise<void> {
  run.show('All three are pending on OTS. Mining a regtest block on each dev calendar...');
  for (const cal of stack.calendars) {
    const block: MineResult = await cal.mine();
    run.summary.blocks.push({ calendar: cal.url, height: block.height, block_hash: block.blockHash });
    run.show(`  ${cal.url}: block ${block.height} ${block.blockHash} (${block.count} commitment${block.count === 1 ? '' : 's'})`);
  }
  run.mark('mined');
}

const LOG_WAIT_MS = 10_000;

/** Its checkpoint carries the TSA's token and every witness's cosignature (the log's signature and one line each). */
function timeWitnessed(proof: AnchorProof, witnesses: number): boolean {
  return (proof.log?.timestamps?.length ?? 0) > 0 && parseNote(proof.log!.checkpoint).signatures.length >= 1 + witnesses;
}

/** The proof once its `log` carries the time witnesses' evidence (bounded by LOG_WAIT_MS); the last one read otherwise. */
async function waitForLogged(read: () => Promise<AnchorProof | null>, witnesses: number): Promise<AnchorProof | null> {
  const deadline = Date.now() + LOG_WAIT_MS;
  let proof = await read();
  for (let i = 0; i < LOG_WAIT_MS / POLL_MS && proof !== null && !timeWitnessed(proof, witnesses) && Date.now() < deadline; i++) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    proof = await read();
  }
  return proof;
}

/** Exports each subject's proof and writes the subject with it attached, and its `.ots`. */
async function writeProofs(run: Run, stack: DevStack, subjects: readonly DemoSubject[], summaries: Map<string, SubjectSummary>): Promise<Map<string, AnchorProof>> {
  const { out } = run.opts;
  run.show(`Writing proofs to ${out}:`);
  const exporter = new ProofExporter(stack.running.daemon.store, { relays: stack.config.nostr.relays, calendars: stack.config.ots.calendars }, { dir: stack.files.logDir });
  const proofs = new Map<string, AnchorProof>();
  for (const s of subjects) {
    // every proof carries its place in the anchor log: a checkpoint comes at most every 200 ms
    const proof = await waitForLogged(() => exporter.export(s.key), stack.witnesses.length);
    if (!proof) throw new DemoError('demo_failed', `no proof for the ${s.label} ${s.key}`);
    if (!proof.log) throw new DemoError('demo_timeout', `the ${s.label} ${s.key} is not in an anchor log checkpoint within ${LOG_WAIT_MS / 1000} s (daemon log: ${stack.files.log})`);
    if (!timeWitnessed(proof, stack.witnesses.length)) throw new DemoError('demo_timeout', `the ${s.label} ${s.key}'s checkpoint has no TSA token or not every witness cosignature within ${LOG_WAIT_MS / 1000} s (daemon log: ${stack.files.log})`);
    proofs.set(s.key, proof);
    const summary = summaries.get(s.key)!;
    run.write(s.file, `${JSON.stringify({ ...s.document, anchor_proof: proof }, null, 2)}\n`);
    if (proof.ots?.proof) {
      run.write(s.otsFile, Buffer.from(proof.ots.proof, 'base64'));
      summary.files.ots = s.otsFile;
    }
    summary.bitcoin = proof.ots?.bitcoin ?? null;
    run.show(`  ${relativeName(out, s.file).padEnd(24)} the ${s.label} with its anchor_proof (${proof.status}); ${summary.files.ots ? relativeName(out, s.otsFile) : 'no .ots'}`);
  }
  run.show(`  ${relativeName(out, stack.files.headers).padEnd(24)} the regtest block headers the verifier checks the attestations against`);
  run.mark('written');
  run.show('');
  return proofs;
}

/** What `aer1-verify-anchor` is given on the command line (verifyCommand), as pipeline options. */
function verifyOptions(stack: DevStack): VerifyOptions {
  return {
    expectedPubkeys: [stack.pubkey],
    logKeys: [parseVerifierKey(logVkey(stack))],
    tsaTrustAnchors: parseTsaTrustAnchors(readFileSync(stack.files.tsaCa, 'utf8'), stack.files.tsaCa),
    witnessKeys: stack.witnesses.map((w) => parseWitnessKey(w.verifierKey)),
    headerSource: new HeadersFileSource(stack.files.headers),
    network: 'regtest',
    eventCache: new EventCheckCache(),
    bitcoinCache: new BitcoinCheckCache(),
  };
}

async function verifyAll(run: Run, stack: DevStack, subjects: readonly DemoSubject[], summaries: Map<string, SubjectSummary>, options: VerifyOptions): Promise<void> {
  run.show(`Verifying, as anyone can (offline): ${verifyCommand(stack, '<file>')}`);
  for (const s of subjects) {
    const report = await verifyFile(s.file, options);
    const v = summarizeReport(report, s.file, verifyCommand(stack, s.file));
    summaries.get(s.key)!.verify = v;
    run.show(`  ${relativeName(run.opts.out, s.file).padEnd(24)} ${v.verdict}: ${v.reason}`);
    for (const t of report.times) run.show(`    time ${t.kind.padEnd(7)} ${t.statement}`);
  }
  run.mark('verified');
  run.show('');
}

type TruncationSummary = NonNullable<DemoSummary['truncation']>;

/** Cuts the workflow's last step, keeps its proof, and shows the verifier's answer. */
async function checkTruncation(run: Run, wf: WorkflowDocument, proof: AnchorProof | undefined, options: VerifyOptions): Promise<TruncationSummary> {
  const { out } = run.opts;
  const cut = cutLastStep(wf);
  const cutFile = run.write(join(out, 'workflow-truncated.json'), `${JSON.stringify({ ...cut, anchor_proof: proof }, null, 2)}\n`);
  run.show(`Removing the workflow's last step (${wf.steps.length} -> ${cut.steps.length} steps) and recomputing its merkle_root; same receipt_id, same anchor_proof:`);
  const report = await verifyFile(cutFile, options);
  const truncation = report.checks.find((c) => c.status === 'FAIL' && c.detail.startsWith('truncated:')) ?? null;
  const summary: TruncationSummary = {
    file: cutFile,
    steps_anchored: wf.steps.length,
    steps_in_file: cut.steps.length,
    verdict: report.verdict,
    reason: report.reason,
    check: truncation ? { name: truncation.name, status: truncation.status, detail: truncation.detail } : null,
    named_truncation: report.verdict === 'FAIL' && truncation !== null,
  };
  run.summary.truncation = summary;
  run.show(`  ${relativeName(out, cutFile).padEnd(24)} ${report.verdict}: ${report.reason}`);
  for (const c of report.checks) run.show(`      ${c.status.padEnd(4)}  ${c.name.padEnd(17)} ${c.detail}`);
  run.mark('truncation_checked');
  run.show('');
  return summary;
}
