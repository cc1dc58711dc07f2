"""python-opentimestamps as a second opinion for the codec tests (run with /usr/bin/python3).

  read FILE...          one JSON line per file: round trip, file digest, attestations
  write DIR N SEED      N random detached files written by python itself
"""
import json
import os
import random
import sys
import warnings

from opentimestamps.core.notary import (BitcoinBlockHeaderAttestation, LitecoinBlockHeaderAttestation,
                                        PendingAttestation, UnknownAttestation)
from opentimestamps.core.op import (OpAppend, OpHexlify, OpKECCAK256, OpPrepend, OpReverse, OpRIPEMD160,
                                    OpSHA1, OpSHA256)
from opentimestamps.core.serialize import BytesDeserializationContext, BytesSerializationContext
from opentimestamps.core.timestamp import DetachedTimestampFile, Timestamp

warnings.simplefilter('ignore')


def describe(att):
    if isinstance(att, PendingAttestation):
        return ['pending', att.uri]
    if isinstance(att, BitcoinBlockHeaderAttestation):
        return ['bitcoin', att.height]
    if isinstance(att, LitecoinBlockHeaderAttestation):
        return ['litecoin', att.height]
    if isinstance(att, UnknownAttestation):
        return ['unknown', att.TAG.hex() + ':' + att.payload.hex()]
    return [att.__class__.__name__, repr(att)]


def read(paths):
    for path in paths:
        data = open(path, 'rb').read()
        try:
            f = DetachedTimestampFile.deserialize(BytesDeserializationContext(data))
        except Exception as e:
            print(json.dumps({'file': path, 'ok': False, 'error': '%s: %s' % (type(e).__name__, e)}))
            continue
        ctx = BytesSerializationContext()
        f.serialize(ctx)
        atts = sorted([describe(a) + [msg.hex()] for msg, a in f.timestamp.all_attestations()], key=json.dumps)
        print(json.dumps({'file': path, 'ok': True, 'roundtrip': ctx.getbytes() == data,
                          'hash_op': str(f.file_hash_op), 'digest': f.file_digest.hex(), 'attestations': atts}))


def random_tree(rng, ts, depth):
    """Branches added in random order; python's serializer sorts them."""
    n_att = rng.randint(0, 2)
    n_ops = 0 if depth >= 5 else rng.randint(0, 3)
    if n_att == 0 and n_ops == 0:
        n_att = 1
    for _ in range(n_att):
        kind = rng.randint(0, 3)
        if kind == 0:
            ts.attestations.add(PendingAttestation('https://cal%d.example.org/x' % rng.randint(0, 9)))
        elif kind == 1:
            ts.attestations.add(BitcoinBlockHeaderAttestation(rng.randint(0, 2 ** 40)))
        elif kind == 2:
            ts.attestations.add(LitecoinBlockHeaderAttestation(rng.randint(0, 300)))
        else:
            ts.attestations.add(UnknownAttestation(bytes(rng.getrandbits(8) for _ in range(8)),
                                                   bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 40)))))
    for _ in range(n_ops):
        k = rng.randint(0, 7)
        if k == 0:
            op = OpAppend(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 3))))
        elif k == 1:
            op = OpPrepend(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 3))))
        elif k == 2:
            op = OpSHA1()
        elif k == 3:
            op = OpRIPEMD160()
        elif k == 4:
            op = OpKECCAK256()
        elif k == 5:
            op = OpReverse()
        elif k == 6 and len(ts.msg) <= 256:
            op = OpHexlify()
        else:
            op = OpSHA256()
        if op in ts.ops:
            continue
        child = ts.ops.add(op)
        random_tree(rng, child, depth + 1)


def write(directory, n, seed):
    rng = random.Random(seed)
    for i in range(n):
        digest = bytes(rng.getrandbits(8) for _ in range(32))
        ts = Timestamp(digest)
        random_tree(rng, ts, 0)
        ctx = BytesSerializationContext()
        DetachedTimestampFile(OpSHA256(), ts).serialize(ctx)
        with open(os.path.join(directory, 'py-%04d.ots' % i), 'wb') as fd:
            fd.write(ctx.getbytes())


if __name__ == '__main__':
    if sys.argv[1] == 'read':
        read(sys.stdin.read().split('\n') if sys.argv[2:] == ['-'] else sys.argv[2:])
    elif sys.argv[1] == 'write':
        write(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
