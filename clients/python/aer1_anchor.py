#!/usr/bin/env python3
"""A client for the aer1-anchor daemon's HTTP API, in one file, standard library only.

Python >= 3.9. Copy this file into a collector (aer1-pydantic, aer1-llamaindex, ...) or run
it as a command. The API is the daemon's `openapi.json` (docs/http.md); what this module
does with it:

    client = AnchorClient("http://127.0.0.1:8787", token="...")
    receipt = collector.finalize()                     # an AER-1 receipt (a dict)
    key = client.enqueue(receipt)["keys"][0]           # POST /v1/anchors
    client.wait(key, until="confirmed", timeout=600)   # GET /v1/anchors/{key}, polled
    receipt = attach_proof(receipt, client.proof(key)) # GET /v1/anchors/{key}/proof
    # receipt["anchor_proof"] is what aer1-verify-anchor checks

Every failure is an AnchorError carrying the daemon's `code`, `message` and the `field` it
named (`output_hash`, `subjects[3].steps[2].seq`, `key`, ...), plus the HTTP status. A 503
(Redis refusing or slow) is retried after its Retry-After, a bounded number of times;
POSTing the same subjects again is safe (the daemon is idempotent by subject key).

As a command (exit 0 ok; 1 a subject refused, not found, failed or not reached in time;
2 usage, an unreadable file, or no daemon to talk to / a token it refuses; 70 a bug):

    python3 aer1_anchor.py [--url URL] [--token T] enqueue FILE...
    python3 aer1_anchor.py status KEY [--json]
    python3 aer1_anchor.py wait KEY [--until confirmed] [--timeout S]
    python3 aer1_anchor.py proof KEY [--attach FILE [--out FILE]]

--url defaults to $AER1_ANCHOR_URL, else http://127.0.0.1:8787; --token to
$AER1_ANCHOR_TOKEN, else $AER1_HTTP_TOKEN (the daemon's own variable for it).
"""
from __future__ import annotations

import argparse
import email.utils
import http.client
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

__version__ = "1.0.0"

DEFAULT_URL = "http://127.0.0.1:8787"
URL_ENV = "AER1_ANCHOR_URL"
TOKEN_ENVS = ("AER1_ANCHOR_TOKEN", "AER1_HTTP_TOKEN")

#: The overall statuses a subject moves through (docs/http.md); failed and rejected are ends.
STATUSES = ("pending", "partial", "confirmed", "failed", "rejected")
_PROGRESS = {"pending": 0, "partial": 1, "confirmed": 2}

#: The most subjects the daemon takes in one POST (openapi.json, EnqueueResult).
MAX_SUBJECTS_PER_REQUEST = 10000
#: The daemon's default http.maxBodyBytes (4 MiB).
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
#: Largest answer read from the daemon; a proof is a few KiB.
MAX_ANSWER_BYTES = 64 * 1024 * 1024

# Codes this client gives to failures that are not the daemon's answer.
UNREACHABLE = "unreachable"  # no connection to the daemon, or it did not answer in time
BAD_ANSWER = "bad_answer"  # an answer that is not the daemon's JSON (a proxy's page, cut off)
TIMEOUT = "timeout"  # wait(): the status was not reached in time
BAD_INPUT = "bad_input"  # the caller's own argument (not JSON-serialisable, not an object)


class AnchorError(Exception):
    """A failure with a stable `code`, a one-line `message` and, when named, the `field` at fault.

    `status` is the HTTP status (None when the daemon did not answer), `retry_after` the
    seconds a 503 asked to wait, `body` the daemon's whole JSON answer when there was one
    (a 409 or a 503 on a bulk POST lists which subjects were queued).
    """

    def __init__(self, code: str, message: str, field: Optional[str] = None, status: Optional[int] = None,
                 retry_after: Optional[float] = None, body: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.status = status
        self.retry_after = retry_after
        self.body = body

    def __str__(self) -> str:
        where = f" (field {self.field})" if self.field is not None else ""
        return f"{self.code}: {self.message}{where}"


def _retry_after_seconds(value: Optional[str]) -> Optional[float]:
    """Retry-After as seconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3)."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def error_from_answer(status: int, body_bytes: bytes, retry_after: Optional[str] = None) -> AnchorError:
    """The AnchorError for a non-2xx answer: the daemon's {"error": {code, message, field?}}, or bad_answer."""
    seconds = _retry_after_seconds(retry_after)
    try:
        body = json.loads(body_bytes.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        body = None
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and isinstance(err.get("code"), str) and isinstance(err.get("message"), str):
        field = err.get("field") if isinstance(err.get("field"), str) else None
        return AnchorError(err["code"], err["message"], field, status, seconds, body)
    text = body_bytes[:200].decode("utf-8", "replace").strip().replace("\n", " ")
    return AnchorError(BAD_ANSWER, f"HTTP {status} without the daemon's error body: {text!r}", None, status, seconds, body)


def attach_proof(document: Dict[str, Any], proof: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of `document` with the proof as its `anchor_proof` member (what aer1-verify-anchor reads)."""
    if not isinstance(document, dict):
        raise AnchorError(BAD_INPUT, "a proof is attached to a JSON object (for a timeline, use {\"entries\": [...]})", "document")
    if not isinstance(proof, dict):
        raise AnchorError(BAD_INPUT, "the proof must be the daemon's aer1-anchor-proof-v1 object", "proof")
    out = dict(document)
    out["anchor_proof"] = proof
    return out


def _json_bytes(value: Any, what: str) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise AnchorError(BAD_INPUT, f"{what} is not JSON: {exc}", what) from None


class AnchorClient:
    """The daemon's HTTP API: enqueue, enqueue_many, status, proof, wait.

    `retries` bounds how often a 503 is retried (after its Retry-After, at most
    `max_retry_wait` seconds each); `timeout` bounds each request.
    """

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, *, timeout: float = 30.0,
                 retries: int = 3, max_retry_wait: float = 60.0, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        base = url if url is not None else os.environ.get(URL_ENV) or DEFAULT_URL
        parsed = urllib.parse.urlsplit(base)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise AnchorError(BAD_INPUT, f"the daemon's URL must be http(s)://host:port, got {base!r}", "url")
        self.url = base.rstrip("/")
        # a loopback daemon is never reached through an http_proxy from the environment
        loopback = (parsed.hostname or "") in ("localhost", "::1") or (parsed.hostname or "").startswith("127.")
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({})) if loopback else urllib.request.build_opener()
        if token is None:
            token = next((os.environ[e] for e in TOKEN_ENVS if os.environ.get(e)), None)
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.max_retry_wait = max_retry_wait
        self.max_body_bytes = max_body_bytes
        self._sleep = sleep

    # -- requests -------------------------------------------------------------------------

    def _once(self, method: str, path: str, body: Optional[bytes]) -> Any:
        headers = {"Accept": "application/json", "User-Agent": f"aer1_anchor.py/{__version__}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
        try:
            with self._opener.open(request, timeout=self.timeout) as answer:
                data = answer.read(MAX_ANSWER_BYTES + 1)
                status = answer.status
                missing = getattr(answer, "length", None)  # what Content-Length promised and never came
                if isinstance(missing, int) and missing > 0 and len(data) <= MAX_ANSWER_BYTES:
                    raise AnchorError(BAD_ANSWER, f"{method} {path}: the answer was cut off ({missing} bytes missing)", None, status)
        except urllib.error.HTTPError as answer:
            with answer:
                data = answer.read(MAX_ANSWER_BYTES + 1)
            raise error_from_answer(answer.code, data, answer.headers.get("Retry-After")) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise AnchorError(UNREACHABLE, f"no answer from {self.url}: {reason}", "url") from None
        except http.client.HTTPException as exc:  # a malformed or cut-off answer
            raise AnchorError(BAD_ANSWER, f"{method} {path}: the answer is not HTTP the client can read: {type(exc).__name__}", None) from None
        if len(data) > MAX_ANSWER_BYTES:
            raise AnchorError(BAD_ANSWER, f"{method} {path}: the answer is over {MAX_ANSWER_BYTES} bytes", None, status)
        try:
            return json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise AnchorError(BAD_ANSWER, f"{method} {path}: HTTP {status} with a body that is not JSON", None, status) from None

    def request(self, method: str, path: str, body: Optional[bytes] = None) -> Any:
        """One call; a 503 is retried after its Retry-After up to `retries` times, then raised."""
        for attempt in range(self.retries + 1):
            try:
                return self._once(method, path, body)
            except AnchorError as err:
                if err.status != 503 or attempt == self.retries:
                    raise
                wait = err.retry_after if err.retry_after is not None else 1.0
                self._sleep(min(wait, self.max_retry_wait))
        raise AssertionError("unreachable")  # the loop returns or raises

    @staticmethod
    def _key_path(key: str, suffix: str = "") -> str:
        if not isinstance(key, str) or key == "":
            raise AnchorError(BAD_INPUT, "a subject key is a non-empty string", "key")
        return "/v1/anchors/" + urllib.parse.quote(key, safe="") + suffix

    # -- the API ----------------------------------------------------------------------------

    def enqueue(self, document: Any) -> Dict[str, Any]:
        """POST one subject (a receipt, a workflow close, a job timeline, ...). 202's body: keys, results."""
        return self.request("POST", "/v1/anchors", _json_bytes(document, "document"))

    def enqueue_raw(self, text: bytes) -> Dict[str, Any]:
        """POST a body as given (JSON text: one subject, or {"subjects": [...]}), byte for byte."""
        return self.request("POST", "/v1/anchors", text)

    def enqueue_many(self, documents: Sequence[Any], per_request: int = 1000) -> Dict[str, Any]:
        """POST many subjects as {"subjects": [...]} (bulk jobs), split by count and body size.

        Returns keys, results and jobs of every request in order. A subject the daemon refuses
        (conflict) is in `results` with its `error`; a 400 raises with the field's index in
        `documents` (the requests before it were queued and are in the error's `body`).
        """
        encoded = [_json_bytes(d, f"documents[{i}]") for i, d in enumerate(documents)]
        return self.enqueue_many_raw(encoded, per_request)

    def enqueue_many_raw(self, encoded: List[bytes], per_request: int = 1000) -> Dict[str, Any]:
        """enqueue_many() for subjects given as JSON texts, each sent byte for byte."""
        if not 1 <= per_request <= MAX_SUBJECTS_PER_REQUEST:
            raise AnchorError(BAD_INPUT, f"per_request must be 1..{MAX_SUBJECTS_PER_REQUEST}", "per_request")
        merged: Dict[str, Any] = {"keys": [], "results": [], "jobs": []}
        start = 0
        while start < len(encoded):
            end, size = start, len(b'{"subjects":[]}')
            while end < len(encoded) and end - start < per_request and (end == start or size + len(encoded[end]) + 1 <= self.max_body_bytes):
                size += len(encoded[end]) + 1
                end += 1
            body = b'{"subjects":[' + b",".join(encoded[start:end]) + b"]}"
            try:
                answer = self.request("POST", "/v1/anchors", body)
            except AnchorError as err:
                err.field = _shift_subject_index(err.field, start)
                if err.status == 409 and isinstance(err.body, dict):
                    answer = err.body  # the others were queued; results say which one conflicts
                else:
                    err.body = {"queued_before": merged, "answer": err.body}
                    raise
            merged["keys"].extend(answer.get("keys", []))
            merged["results"].extend(answer.get("results", []))
            merged["jobs"].extend(answer.get("jobs", []))
            start = end
        return merged

    def status(self, key: str) -> Dict[str, Any]:
        """GET /v1/anchors/{key}: the record, each witness, the history (404: not_found)."""
        return self.request("GET", self._key_path(key))

    def proof(self, key: str) -> Dict[str, Any]:
        """GET /v1/anchors/{key}/proof: the aer1-anchor-proof-v1 (404: not_found, or no_proof for a refused subject)."""
        return self.request("GET", self._key_path(key, "/proof"))

    def wait(self, key: str, until: str = "confirmed", timeout: float = 600.0, poll: float = 1.0) -> Dict[str, Any]:
        """Polls the subject until its status is `until` (or beyond it: partial is past pending).

        A subject not known yet (its job still queued) is waited for too. Raises AnchorError
        `timeout` when not reached in `timeout` seconds, and the subject's own status
        (`failed`, `rejected`) when it ends there instead.
        """
        if until not in STATUSES:
            raise AnchorError(BAD_INPUT, f"until must be one of {', '.join(STATUSES)}, got {until!r}", "until")
        if timeout < 0 or poll <= 0:
            raise AnchorError(BAD_INPUT, "timeout must be >= 0 and poll > 0", "timeout")
        deadline = time.monotonic() + timeout
        last: Optional[Dict[str, Any]] = None
        for _ in range(int(timeout / poll) + 2):
            try:
                last = self.status(key)
            except AnchorError as err:
                if err.code != "not_found":
                    raise
            status = last.get("status") if isinstance(last, dict) else None
            if status == until or (until in _PROGRESS and status in _PROGRESS and _PROGRESS[status] >= _PROGRESS[until]):
                return last  # type: ignore[return-value]
            if status in ("failed", "rejected"):
                reason = last.get("reason") if isinstance(last, dict) else None
                raise AnchorError(status, f"subject {key} is {status}{': ' + reason if reason else ''}", body=last)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self._sleep(min(poll, remaining))
        seen = last.get("status") if isinstance(last, dict) else "not known to the daemon"
        raise AnchorError(TIMEOUT, f"subject {key} is {seen} after {timeout:g} s, not {until}", body=last)

    def anchor(self, document: Dict[str, Any], timeout: float = 600.0, poll: float = 1.0) -> Dict[str, Any]:
        """Enqueue, wait until confirmed, and return the document with its anchor_proof attached."""
        key = self.enqueue(document)["keys"][0]
        self.wait(key, "confirmed", timeout, poll)
        return attach_proof(document, self.proof(key))


def _shift_subject_index(field: Optional[str], offset: int) -> Optional[str]:
    """`subjects[i]...` of one request as `subjects[offset+i]...` of the whole list."""
    if field is None or offset == 0 or not field.startswith("subjects["):
        return field
    close = field.find("]")
    index = field[len("subjects["):close]
    return f"subjects[{int(index) + offset}]{field[close + 1:]}" if index.isdigit() else field


# -- the command ------------------------------------------------------------------------------

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 70
PROG = "aer1_anchor"


class UsageProblem(Exception):
    """Bad words, flags or an unreadable input file: exit 2."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_json_file(path: str) -> bytes:
    """The file's bytes (stdin for `-`), checked to be UTF-8 JSON; else UsageProblem."""
    name = "stdin" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError as exc:
        raise UsageProblem(f"cannot read {name}: {exc.strerror or exc}") from None
    try:
        json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise UsageProblem(f"{name} is not valid UTF-8 text") from None
    except ValueError as exc:
        raise UsageProblem(f"{name} is not JSON: {exc}") from None
    return data


def _exit_code_for(err: AnchorError) -> int:
    # no daemon, or one that refuses our token: the command's setup is wrong, not the subject
    if err.code in (UNREACHABLE, BAD_INPUT) or err.status in (401, 403, 421):
        return EXIT_USAGE
    return EXIT_FAILED


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="aer1_anchor.py", description="Anchor AER-1 documents with an aer1-anchor daemon over HTTP.",
                                epilog=f"URL from --url, ${URL_ENV} or {DEFAULT_URL}; token from --token, ${TOKEN_ENVS[0]} or ${TOKEN_ENVS[1]}. "
                                       "Exit 0 ok; 1 refused, not found, failed or not reached in time; 2 usage, unreadable input, no daemon or a refused token.")
    p.add_argument("--url", help=f"the daemon's HTTP URL (default ${URL_ENV}, else {DEFAULT_URL})")
    p.add_argument("--token", help=f"bearer token (default ${TOKEN_ENVS[0]}, else ${TOKEN_ENVS[1]})")
    p.add_argument("--retries", type=int, default=3, help="retries of a 503, each after its Retry-After (default 3)")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    e = sub.add_parser("enqueue", help="enqueue documents (several files: one bulk request)")
    e.add_argument("files", nargs="+", metavar="FILE", help="a JSON document; - for stdin")
    e.add_argument("--json", action="store_true", help="print the daemon's answer")
    s = sub.add_parser("status", help="a subject's state")
    s.add_argument("key", metavar="KEY")
    s.add_argument("--json", action="store_true", help="print the daemon's whole answer")
    w = sub.add_parser("wait", help="wait until a subject reaches a status")
    w.add_argument("key", metavar="KEY")
    w.add_argument("--until", default="confirmed", choices=STATUSES, help="the status to wait for (default confirmed)")
    w.add_argument("--timeout", type=float, default=600.0, metavar="S", help="seconds (default 600)")
    w.add_argument("--poll", type=float, default=1.0, metavar="S", help="seconds between looks (default 1)")
    pr = sub.add_parser("proof", help="print a subject's proof, or attach it to a document as anchor_proof")
    pr.add_argument("key", metavar="KEY")
    pr.add_argument("--attach", metavar="FILE", help="write FILE with the proof attached as anchor_proof")
    pr.add_argument("--out", metavar="FILE", help="with --attach: write here instead of FILE")
    return p


def _enqueue(client: AnchorClient, files: List[str], as_json: bool) -> int:
    texts = [read_json_file(f) for f in files]
    try:
        answer = client.enqueue_raw(texts[0]) if len(texts) == 1 else client.enqueue_many_raw(texts, MAX_SUBJECTS_PER_REQUEST)
    except AnchorError as err:
        if len(files) > 1 and err.field is not None and err.field.startswith("subjects["):
            index = err.field[len("subjects["):err.field.find("]")]
            if index.isdigit() and int(index) < len(files):
                err.message = f"{files[int(index)]}: {err.message}"
        elif len(files) == 1:
            err.message = f"{files[0]}: {err.message}"
        raise
    if as_json:
        print(json.dumps(answer, indent=2))
    failed = False
    for i, result in enumerate(answer.get("results", [])):
        name = files[i] if i < len(files) else result.get("key")
        if "error" in result:
            failed = True
            if not as_json:
                print(f"{name}: {result.get('key')}: refused: {result['error'].get('message')}")
        elif not as_json:
            what = {"queued": "queued", "in-queue": "already queued", "known": f"already anchored ({result.get('status')})"}.get(result.get("result"), result.get("result"))
            print(f"{name}: {result.get('key')}: {what}")
    return EXIT_FAILED if failed else EXIT_OK


def _write_attached(path: str, out: Optional[str], proof: Dict[str, Any]) -> None:
    document = json.loads(read_json_file(path).decode("utf-8"))
    if not isinstance(document, dict):
        raise UsageProblem(f"{path} must hold a JSON object to attach a proof to (for a timeline, use {{\"entries\": [...]}})")
    target = out or path
    text = json.dumps(attach_proof(document, proof), indent=2, ensure_ascii=False) + "\n"
    tmp = f"{target}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)  # never a half-written document
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise UsageProblem(f"cannot write {target}: {exc.strerror or exc}") from None
    print(f"{target}: anchor_proof attached (status {proof.get('status')})")


def main(argv: Optional[Iterable[str]] = None) -> int:
    args = _parser().parse_args(None if argv is None else list(argv))  # usage errors: argparse exits 2
    try:
        client = AnchorClient(args.url, args.token, retries=max(0, args.retries))
        if args.command == "enqueue":
            return _enqueue(client, args.files, args.json)
        if args.command == "status":
            view = client.status(args.key)
            if args.json:
                print(json.dumps(view, indent=2))
            else:
                witnesses = view.get("witnesses") or {}
                parts = [f"{name} {w.get('status')}" if isinstance(w, dict) else f"{name} {w}" for name, w in witnesses.items()]
                reason = f" ({view['reason']})" if view.get("reason") else ""
                print(f"{view.get('key')}: {view.get('status')}{reason}" + (f"; {', '.join(parts)}" if parts else ""))
            return EXIT_OK
        if args.command == "wait":
            view = client.wait(args.key, args.until, args.timeout, args.poll)
            print(f"{args.key}: {view.get('status')}")
            return EXIT_OK
        if args.command == "proof":
            if args.out and not args.attach:
                raise UsageProblem("--out goes with --attach FILE")
            if args.attach:
                read_json_file(args.attach)  # an unreadable file is found before asking the daemon
            proof = client.proof(args.key)
            if args.attach:
                _write_attached(args.attach, args.out, proof)
            else:
                print(json.dumps(proof, indent=2))
            return EXIT_OK
        raise UsageProblem(f"unknown command {args.command!r}")
    except UsageProblem as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except AnchorError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return _exit_code_for(err)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug: one line, never a traceback
        print(f"{PROG}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
