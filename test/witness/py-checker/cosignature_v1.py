"""cosignature/v1 (c2sp.org/tlog-cosignature) written from the spec's text, apart from the
TypeScript code, on Python's `cryptography` (Debian python3-cryptography).

stdin: {"check": [{"note": str, "vkeys": [str]}], "sign": {"name": str, "texts": [str], "time": int}}
stdout: {"check": [[{"name", "vkey_ok", "lines", "verified", "times"}]], "sign": {"vkey", "lines": [str]}}
"""
import base64
import hashlib
import json
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

EM_DASH = "\u2014"


def key_id(name, public_key):
    # SHA-256(<name> || "\n" || 0x04 || 32-byte Ed25519 cosigner public key)[:4]
    return hashlib.sha256(name.encode("utf-8") + b"\n" + b"\x04" + public_key).digest()[:4]


def parse_vkey(vkey):
    # <key name>+hex(32-bit key ID)+base64(signature type || public key)
    name, hex_id, b64 = vkey.split("+", 2)
    data = base64.b64decode(b64, validate=True)
    if data[0] != 0x04 or len(data) != 33:
        raise ValueError("not a cosignature/v1 Ed25519 vkey")
    public_key = data[1:]
    return name, bytes.fromhex(hex_id), public_key


def message(text, timestamp):
    # two newline-terminated lines, then the note body with its final newline
    return b"cosignature/v1\n" + b"time " + str(timestamp).encode("ascii") + b"\n" + text.encode("utf-8")


def check(note, vkey):
    name, hex_id, public_key = parse_vkey(vkey)
    vkey_ok = hex_id == key_id(name, public_key)
    split = note.rindex("\n\n")
    text, sigs = note[: split + 1], note[split + 2 :]
    verifier = Ed25519PublicKey.from_public_bytes(public_key)
    lines, verified, times = 0, True, []
    for line in sigs.split("\n")[:-1]:
        assert line.startswith(EM_DASH + " ")
        line_name, b64 = line[2:].split(" ", 1)
        raw = base64.b64decode(b64, validate=True)
        if line_name != name or raw[:4] != key_id(name, public_key):
            continue
        lines += 1
        if len(raw) != 4 + 8 + 64:
            verified = False
            continue
        timestamp = int.from_bytes(raw[4:12], "big")
        try:
            verifier.verify(raw[12:], message(text, timestamp))
            times.append(timestamp)
        except InvalidSignature:
            verified = False
    return {"name": name, "vkey_ok": vkey_ok, "lines": lines, "verified": verified and lines > 0, "times": times}


def sign(name, texts, timestamp):
    private = Ed25519PrivateKey.generate()
    public_key = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    kid = key_id(name, public_key)
    vkey = name + "+" + kid.hex() + "+" + base64.b64encode(b"\x04" + public_key).decode()
    lines = []
    for text in texts:
        sig = private.sign(message(text, timestamp))
        lines.append(EM_DASH + " " + name + " " + base64.b64encode(kid + timestamp.to_bytes(8, "big") + sig).decode() + "\n")
    return {"vkey": vkey, "lines": lines}


def main():
    req = json.load(sys.stdin)
    out = {"check": [[check(c["note"], v) for v in c["vkeys"]] for c in req.get("check", [])]}
    if "sign" in req:
        s = req["sign"]
        out["sign"] = sign(s["name"], s["texts"], s["time"])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
