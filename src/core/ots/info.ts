/**
 * Human and JSON views of a detached timestamp, as `ots info` shows it: ops one per line,
 * forks as ` -> op` with the branch indented, attestations as `verify …`.
 * Built with explicit stacks (no recursion over a tree of hostile depth).
 */
import { type Attestation, attestationToString } from './attestations.js';
import type { DetachedTimestampFile } from './codec.js';
import { opArg, opToString } from './ops.js';
import type { Timestamp } from './timestamp.js';

function reversedHex(b: Buffer): string {
  return Buffer.from(b).reverse().toString('hex');
}

export function formatTimestampTree(root: Timestamp): string {
  const lines: string[] = [];
  type Item = { node: Timestamp; indent: number } | string;
  const stack: Item[] = [{ node: root, indent: 0 }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    if (typeof item === 'string') {
      lines.push(item);
      continue;
    }
    const { node, indent } = item;
    const pad = ' '.repeat(indent);
    for (const a of node.attestations) {
      lines.push(`${pad}verify ${attestationToString(a)}`);
      if (a.kind === 'bitcoin') lines.push(`${pad}# Bitcoin block merkle root ${reversedHex(node.msg)}`);
      if (a.kind === 'litecoin') lines.push(`${pad}# Litecoin block merkle root ${reversedHex(node.msg)}`);
    }
    const next: Item[] = [];
    if (node.ops.length > 1) {
      for (const { op, timestamp } of node.ops) next.push(`${pad} -> ${opToString(op)}`, { node: timestamp, indent: indent + 4 });
    } else if (node.ops.length === 1) {
      const { op, timestamp } = node.ops[0]!;
      next.push(`${pad}${opToString(op)}`, { node: timestamp, indent });
    }
    for (let i = next.length - 1; i >= 0; i--) stack.push(next[i]!);
  }
  return lines.join('\n');
}

export function formatInfo(file: DetachedTimestampFile): string {
  return `File ${file.hashOp} hash: ${file.digest.toString('hex')}\nTimestamp:\n${formatTimestampTree(file.timestamp)}`;
}

export type AttestationJson =
  | { kind: 'pending'; uri: string }
  | { kind: 'bitcoin' | 'litecoin'; height: number }
  | { kind: 'unknown'; tag: string; payload: string };

export function attestationJson(a: Attestation): AttestationJson {
  switch (a.kind) {
    case 'pending':
      return { kind: 'pending', uri: a.uri };
    case 'bitcoin':
    case 'litecoin':
      return { kind: a.kind, height: a.height };
    case 'unknown':
      return { kind: 'unknown', tag: a.tag.toString('hex'), payload: a.payload.toString('hex') };
  }
}

export interface TimestampJson {
  msg: string;
  attestations: AttestationJson[];
  ops: Array<{ op: string; arg?: string; timestamp: TimestampJson }>;
}

export function timestampJson(root: Timestamp): TimestampJson {
  const make = (node: Timestamp): TimestampJson => ({ msg: node.msg.toString('hex'), attestations: node.attestations.map(attestationJson), ops: [] });
  const out = make(root);
  const stack: Array<[Timestamp, TimestampJson]> = [[root, out]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [node, json] = item;
    for (const { op, timestamp } of node.ops) {
      const child = make(timestamp);
      const arg = opArg(op);
      json.ops.push(arg ? { op: op.kind, arg: arg.toString('hex'), timestamp: child } : { op: op.kind, timestamp: child });
      stack.push([timestamp, child]);
    }
  }
  return out;
}
