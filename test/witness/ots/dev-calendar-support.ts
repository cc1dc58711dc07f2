/**
 * Second opinions for the calendar tests: python-opentimestamps parses what the dev
 * calendar serves, python-bitcoinlib parses its transactions and checks its headers.
 * One python process per call, many checks per call.
 */
import { spawnSync } from 'node:child_process';

export const PYTHON = '/usr/bin/python3';

const SCRIPT = String.raw`
import sys, json, hashlib
from opentimestamps.core.timestamp import Timestamp
from opentimestamps.core.serialize import BytesDeserializationContext, BytesSerializationContext
from opentimestamps.core.notary import PendingAttestation, BitcoinBlockHeaderAttestation
from opentimestamps.core.op import OpAppend, OpPrepend
import bitcoin
from bitcoin.core import CTransaction, CBlockHeader, CheckProofOfWork
bitcoin.SelectParams('regtest')

def parse(start, data):
    ctx = BytesDeserializationContext(data)
    ts = Timestamp.deserialize(ctx, start)
    ctx.assert_eof()
    out = BytesSerializationContext()
    ts.serialize(out)
    return ts, out.getbytes() == data

def atts(ts):
    r = []
    for msg, a in sorted(ts.all_attestations(), key=lambda p: p[0]):
        if isinstance(a, PendingAttestation):
            r.append({'msg': msg.hex(), 'type': 'pending', 'uri': a.uri})
        elif isinstance(a, BitcoinBlockHeaderAttestation):
            r.append({'msg': msg.hex(), 'type': 'bitcoin', 'height': a.height})
        else:
            r.append({'msg': msg.hex(), 'type': 'other'})
    return r

def linear_nodes(ts):
    node = ts
    while True:
        yield node
        if len(node.ops) != 1:
            return
        node = next(iter(node.ops.values()))

def find_tx(ts):
    for node in linear_nodes(ts):
        for op, child in node.ops.items():
            if isinstance(op, OpPrepend) and len(op[0]) > 32:
                for op2 in child.ops.keys():
                    if isinstance(op2, OpAppend):
                        raw = op[0] + node.msg + op2[0]
                        tx = CTransaction.deserialize(raw)
                        dsha = hashlib.sha256(hashlib.sha256(raw).digest()).digest()
                        return {'txid_ok': tx.GetTxid() == dsha, 'txid': dsha.hex(),
                                'op_return_has_tip': any(bytes(o.scriptPubKey) == b'\x6a\x20' + node.msg for o in tx.vout),
                                'tip': node.msg.hex()}
    return None

def header_check(header_hex, msg_hex):
    h = CBlockHeader.deserialize(bytes.fromhex(header_hex))
    r = {'bits': h.nBits, 'merkle_ok': h.hashMerkleRoot.hex() == msg_hex}
    try:
        CheckProofOfWork(h.GetHash(), h.nBits)
        r['pow_ok'] = True
    except Exception as e:
        r['pow_ok'] = False
        r['pow_error'] = str(e)
    r['prev'] = h.hashPrevBlock.hex()
    r['hash'] = h.GetHash().hex()
    return r

results = []
for job in json.load(sys.stdin):
    try:
        if job['kind'] == 'parse':
            ts, rt = parse(bytes.fromhex(job['start']), bytes.fromhex(job['bytes']))
            res = {'attestations': atts(ts), 'roundtrip': rt, 'tree': ts.str_tree()}
            if job.get('tx'):
                res['tx'] = find_tx(ts)
            results.append(res)
        elif job['kind'] == 'merge':
            ts, _ = parse(bytes.fromhex(job['digest']), bytes.fromhex(job['submit']))
            up, _ = parse(bytes.fromhex(job['commitment']), bytes.fromhex(job['upgrade']))
            merged = False
            for node in linear_nodes(ts):
                if node.msg == up.msg:
                    node.merge(up)
                    merged = True
            results.append({'merged': merged, 'attestations': atts(ts)})
        elif job['kind'] == 'merkle':
            import opentimestamps.bitcoin as otsbtc
            from opentimestamps.core.timestamp import make_merkle_tree
            from bitcoin.core import CBlock
            leaves = [Timestamp(bytes.fromhex(l)) for l in job['leaves']]
            if job['tree'] == 'ots':
                tip = make_merkle_tree(leaves)
                check_root = None
            else:
                tip = getattr(otsbtc, '__make_btc_block_merkle_tree')(list(leaves))
                check_root = CBlock.build_merkle_tree_from_txids([bytes.fromhex(l) for l in job['leaves']])[-1].hex()
            tip.attestations.add(PendingAttestation('x'))
            paths = []
            for leaf in leaves:
                out = BytesSerializationContext()
                leaf.serialize(out)
                paths.append(out.getbytes().hex())
            results.append({'tip': tip.msg.hex(), 'paths': paths, 'bitcoinlib_root': check_root})
        elif job['kind'] == 'header':
            results.append(header_check(job['header'], job['msg']))
        else:
            results.append({'error': 'unknown job'})
    except Exception as e:
        results.append({'error': '%s: %s' % (type(e).__name__, e)})
json.dump(results, sys.stdout)
`;

export interface PyAttestation {
  msg: string;
  type: 'pending' | 'bitcoin' | 'other';
  uri?: string;
  height?: number;
}

export type PyJob =
  | { kind: 'parse'; start: string; bytes: string; tx?: boolean }
  | { kind: 'merge'; digest: string; submit: string; commitment: string; upgrade: string }
  | { kind: 'header'; header: string; msg: string }
  | { kind: 'merkle'; tree: 'ots' | 'bitcoin'; leaves: string[] };

export interface PyResult {
  error?: string;
  attestations?: PyAttestation[];
  roundtrip?: boolean;
  tree?: string;
  tx?: { txid_ok: boolean; txid: string; op_return_has_tip: boolean; tip: string } | null;
  merged?: boolean;
  bits?: number;
  merkle_ok?: boolean;
  pow_ok?: boolean;
  pow_error?: string;
  prev?: string;
  hash?: string;
  tip?: string;
  paths?: string[];
  bitcoinlib_root?: string | null;
}

export function python(jobs: PyJob[]): PyResult[] {
  const r = spawnSync(PYTHON, ['-c', SCRIPT], { input: JSON.stringify(jobs), encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`python-opentimestamps check failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as PyResult[];
}
