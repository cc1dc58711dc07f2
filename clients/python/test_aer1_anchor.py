"""Unit tests of aer1_anchor.py: how answers map to AnchorError and exit codes, 503 retries,
bulk splitting, wait(). The daemon is played by a stand-in loopback HTTP server (scripted
answers in the daemon's documented shapes); the real daemon is in
test/clients/python-client.test.ts. Run: python3 -m unittest clients/python/test_aer1_anchor.py
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import socket
import sys
import tempfile
import threading
import unittest
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aer1_anchor  # noqa: E402
from aer1_anchor import AnchorClient, AnchorError, attach_proof, main  # noqa: E402

Answer = Tuple[int, Dict[str, str], bytes]


def error_body(code: str, message: str, field: Optional[str] = None, **extra: Any) -> bytes:
    err: Dict[str, Any] = {"code": code, "message": message}
    if field is not None:
        err["field"] = field
    return json.dumps({"error": err, **extra}).encode()


class StandIn:
    """A stand-in for the daemon: answers each request with the next scripted answer, records requests."""

    def __init__(self, answers: List[Answer]) -> None:
        self.answers = list(answers)
        self.requests: List[Dict[str, Any]] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                stand_in.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body})
                status, headers, payload = stand_in.answers.pop(0) if stand_in.answers else (500, {}, error_body("internal", "no answer scripted"))
                self.send_response(status)
                headers = {"Content-Type": "application/json", **headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = _answer
            do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


RECEIPT = {"id": "00000000-0000-4000-8000-000000000001", "output_hash": "sha256:" + "0" * 64}
QUEUED = json.dumps({"keys": ["k1"], "results": [{"key": "k1", "result": "queued", "status": None}]}).encode()


class WithStandIn(unittest.TestCase):
    def stand_in(self, *answers: Answer) -> StandIn:
        s = StandIn(list(answers))
        self.addCleanup(s.close)
        return s

    def client(self, s: StandIn, **kw: Any) -> Tuple[AnchorClient, List[float]]:
        slept: List[float] = []
        return AnchorClient(s.url, "t0ken", sleep=slept.append, **kw), slept

    def run_cli(self, *argv: str) -> Tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:  # argparse's usage errors
                code = int(exc.code or 0)
        return code, out.getvalue(), err.getvalue()


class ErrorMapping(WithStandIn):
    def test_a_400_carries_the_daemons_code_message_and_field(self) -> None:
        s = self.stand_in((400, {}, error_body("output_hash_mismatch", "output_hash does not match canonical_bytes", "output_hash")))
        client, _ = self.client(s)
        with self.assertRaises(AnchorError) as caught:
            client.enqueue(RECEIPT)
        e = caught.exception
        self.assertEqual((e.code, e.field, e.status), ("output_hash_mismatch", "output_hash", 400))
        self.assertEqual(e.message, "output_hash does not match canonical_bytes")
        self.assertIn("(field output_hash)", str(e))
        self.assertEqual(s.requests[0]["headers"]["Authorization"], "Bearer t0ken")
        self.assertEqual(json.loads(s.requests[0]["body"]), RECEIPT)

    def test_a_404_on_status_is_not_found_naming_key_and_the_key_is_one_path_segment(self) -> None:
        s = self.stand_in((404, {}, error_body("not_found", 'no subject with key "a/b"', "key")))
        client, _ = self.client(s)
        with self.assertRaises(AnchorError) as caught:
            client.status("a/b")
        self.assertEqual((caught.exception.code, caught.exception.field, caught.exception.status), ("not_found", "key", 404))
        self.assertEqual(s.requests[0]["path"], "/v1/anchors/a%2Fb")

    def test_no_proof_for_a_refused_subject(self) -> None:
        s = self.stand_in((404, {}, error_body("no_proof", "subject k was refused: missing canonical_bytes", "key")))
        client, _ = self.client(s)
        with self.assertRaises(AnchorError) as caught:
            client.proof("k")
        self.assertEqual(caught.exception.code, "no_proof")
        self.assertEqual(s.requests[0]["path"], "/v1/anchors/k/proof")

    def test_a_409_on_one_subject_raises_conflict_with_the_body(self) -> None:
        body = error_body("conflict", "conflict: subject k1 is already anchored with another root", "$", keys=["k1"], results=[])
        s = self.stand_in((409, {}, body))
        client, _ = self.client(s)
        with self.assertRaises(AnchorError) as caught:
            client.enqueue(RECEIPT)
        self.assertEqual((caught.exception.code, caught.exception.status), ("conflict", 409))
        self.assertEqual(caught.exception.body["keys"], ["k1"])

    def test_an_answer_that_is_not_the_daemons_json_is_bad_answer(self) -> None:
        s = self.stand_in((502, {"Content-Type": "text/html"}, b"<html>Bad Gateway</html>"))
        client, _ = self.client(s)
        with self.assertRaises(AnchorError) as caught:
            client.status("k")
        self.assertEqual((caught.exception.code, caught.exception.status, caught.exception.field), ("bad_answer", 502, None))
        self.assertIn("Bad Gateway", caught.exception.message)

    def test_an_answer_cut_off_before_its_length_is_bad_answer(self) -> None:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        self.addCleanup(listener.close)

        def serve() -> None:
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"key\"")

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        client = AnchorClient(f"http://127.0.0.1:{listener.getsockname()[1]}", sleep=lambda s: None)
        with self.assertRaises(AnchorError) as caught:
            client.status("k")
        thread.join(5)
        self.assertEqual(caught.exception.code, "bad_answer")
        self.assertIn("cut off (94 bytes missing)", caught.exception.message)

    def test_no_daemon_is_unreachable_naming_url(self) -> None:
        client = AnchorClient(f"http://127.0.0.1:{free_port()}", sleep=lambda s: None)
        with self.assertRaises(AnchorError) as caught:
            client.status("k")
        self.assertEqual((caught.exception.code, caught.exception.field, caught.exception.status), ("unreachable", "url", None))

    def test_a_url_that_is_not_http_is_refused_naming_url(self) -> None:
        with self.assertRaises(AnchorError) as caught:
            AnchorClient("ftp://x")
        self.assertEqual((caught.exception.code, caught.exception.field), ("bad_input", "url"))

    def test_attach_proof_needs_an_object(self) -> None:
        self.assertEqual(attach_proof({"id": "x"}, {"status": "confirmed"}), {"id": "x", "anchor_proof": {"status": "confirmed"}})
        with self.assertRaises(AnchorError) as caught:
            attach_proof([1, 2], {})  # type: ignore[arg-type]
        self.assertEqual((caught.exception.code, caught.exception.field), ("bad_input", "document"))


class RetryAfter(WithStandIn):
    def test_a_503_is_retried_after_its_retry_after(self) -> None:
        s = self.stand_in((503, {"Retry-After": "2"}, error_body("redis_busy", "Redis is busy")), (202, {}, QUEUED))
        client, slept = self.client(s)
        self.assertEqual(client.enqueue(RECEIPT)["keys"], ["k1"])
        self.assertEqual(slept, [2.0])
        self.assertEqual(len(s.requests), 2)
        self.assertEqual(s.requests[0]["body"], s.requests[1]["body"])

    def test_retries_are_bounded_then_the_503_is_raised_with_its_code(self) -> None:
        answers = [(503, {"Retry-After": "5"}, error_body("redis_unavailable", "no connection to Redis"))] * 3
        s = self.stand_in(*answers)
        client, slept = self.client(s, retries=2)
        with self.assertRaises(AnchorError) as caught:
            client.status("k")
        self.assertEqual((caught.exception.code, caught.exception.status, caught.exception.retry_after), ("redis_unavailable", 503, 5.0))
        self.assertEqual(slept, [5.0, 5.0])
        self.assertEqual(len(s.requests), 3)

    def test_a_long_retry_after_is_capped_and_an_http_date_is_read(self) -> None:
        s = self.stand_in(
            (503, {"Retry-After": "3600"}, error_body("redis_out_of_memory", "Redis refuses writes")),
            (503, {"Retry-After": formatdate(usegmt=True)}, error_body("redis_busy", "busy")),
            (202, {}, QUEUED),
        )
        client, slept = self.client(s, max_retry_wait=7)
        client.enqueue(RECEIPT)
        self.assertEqual(slept[0], 7)
        self.assertLessEqual(slept[1], 1.0)

    def test_other_errors_are_not_retried(self) -> None:
        s = self.stand_in((400, {}, error_body("bad_json", "the body is not JSON", "$")))
        client, slept = self.client(s)
        with self.assertRaises(AnchorError):
            client.enqueue(RECEIPT)
        self.assertEqual((slept, len(s.requests)), ([], 1))


class Bulk(WithStandIn):
    def test_many_subjects_go_in_requests_within_the_body_limit_and_results_merge(self) -> None:
        docs = [{"id": f"k{i}", "pad": "x" * 100} for i in range(5)]
        one = lambda keys: json.dumps({"keys": keys, "results": [{"key": k, "result": "queued", "status": None, "job": "bulk-1"} for k in keys], "jobs": ["bulk-1"]}).encode()
        s = self.stand_in((202, {}, one(["k0", "k1"])), (202, {}, one(["k2", "k3"])), (202, {}, one(["k4"])))
        client, _ = self.client(s, max_body_bytes=300)
        merged = client.enqueue_many(docs)
        self.assertEqual(merged["keys"], ["k0", "k1", "k2", "k3", "k4"])
        self.assertEqual(len(s.requests), 3)
        for r in s.requests:
            self.assertLessEqual(len(r["body"]), 300)
            self.assertIn("subjects", json.loads(r["body"]))

    def test_a_400_in_a_later_request_names_the_subject_by_its_index_in_the_whole_list(self) -> None:
        docs = [{"id": f"k{i}"} for i in range(4)]
        s = self.stand_in((202, {}, QUEUED), (400, {}, error_body("missing", "canonical_bytes: required", "subjects[1].canonical_bytes")))
        client, _ = self.client(s)
        with self.assertRaises(AnchorError) as caught:
            client.enqueue_many(docs, per_request=2)
        self.assertEqual(caught.exception.field, "subjects[3].canonical_bytes")
        self.assertEqual(caught.exception.body["queued_before"]["keys"], ["k1"])

    def test_a_conflict_in_bulk_is_a_result_not_an_exception(self) -> None:
        body = error_body("conflict", "conflict", "subjects[1]", keys=["a", "b"], results=[{"key": "a", "result": "queued", "status": None}, {"key": "b", "error": {"code": "conflict", "message": "another root"}}])
        s = self.stand_in((409, {}, body))
        client, _ = self.client(s)
        merged = client.enqueue_many([{"id": "a"}, {"id": "b"}])
        self.assertEqual(merged["results"][1]["error"]["code"], "conflict")


class Wait(WithStandIn):
    def view(self, status: str, reason: Optional[str] = None) -> Answer:
        return (200, {}, json.dumps({"key": "k", "status": status, "reason": reason}).encode())

    def test_waits_through_not_found_and_pending_until_confirmed(self) -> None:
        s = self.stand_in((404, {}, error_body("not_found", "no subject", "key")), self.view("pending"), self.view("partial"), self.view("confirmed"))
        client, slept = self.client(s)
        self.assertEqual(client.wait("k", "confirmed", timeout=60, poll=0.5)["status"], "confirmed")
        self.assertEqual(slept, [0.5, 0.5, 0.5])

    def test_partial_is_past_pending(self) -> None:
        s = self.stand_in(self.view("partial"))
        client, _ = self.client(s)
        self.assertEqual(client.wait("k", "pending", timeout=5)["status"], "partial")

    def test_a_rejected_subject_ends_the_wait_with_its_reason(self) -> None:
        s = self.stand_in(self.view("rejected", "output_hash does not match"))
        client, _ = self.client(s)
        with self.assertRaises(AnchorError) as caught:
            client.wait("k", timeout=60)
        self.assertEqual(caught.exception.code, "rejected")
        self.assertIn("output_hash does not match", caught.exception.message)

    def test_not_reached_in_time_is_timeout(self) -> None:
        s = self.stand_in(self.view("pending"))
        client, _ = self.client(s)
        with self.assertRaises(AnchorError) as caught:
            client.wait("k", timeout=0)
        self.assertEqual(caught.exception.code, "timeout")
        self.assertIn("is pending after 0 s, not confirmed", caught.exception.message)


class Command(WithStandIn):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def file(self, name: str, content: str) -> str:
        path = os.path.join(self.dir.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(content)
        return path

    def test_a_refused_document_exits_1_naming_file_and_field(self) -> None:
        s = self.stand_in((400, {}, error_body("missing", "canonical_bytes: required member is missing", "canonical_bytes")))
        path = self.file("r.json", json.dumps(RECEIPT))
        code, _, err = self.run_cli("--url", s.url, "enqueue", path)
        self.assertEqual(code, 1)
        self.assertIn(f"missing: {path}: canonical_bytes: required member is missing (field canonical_bytes)", err)

    def test_several_files_name_the_file_of_the_subject_the_daemon_named(self) -> None:
        s = self.stand_in((400, {}, error_body("missing", "canonical_bytes: required", "subjects[1].canonical_bytes")))
        a, b = self.file("a.json", "{}"), self.file("b.json", "{}")
        code, _, err = self.run_cli("--url", s.url, "enqueue", a, b)
        self.assertEqual(code, 1)
        self.assertIn(f"{b}: canonical_bytes", err)
        self.assertEqual(json.loads(s.requests[0]["body"]), {"subjects": [{}, {}]})

    def test_the_file_is_sent_byte_for_byte(self) -> None:
        s = self.stand_in((202, {}, QUEUED))
        text = '{"id": "k1",   "n": 1.50}'
        code, out, _ = self.run_cli("--url", s.url, "enqueue", self.file("r.json", text))
        self.assertEqual((code, s.requests[0]["body"].decode()), (0, text))
        self.assertIn("k1: queued", out)

    def test_unreadable_or_non_json_input_exits_2_before_any_request(self) -> None:
        s = self.stand_in()
        for path, says in ((os.path.join(self.dir.name, "absent.json"), "cannot read"), (self.file("x.json", "{nope"), "is not JSON"), (self.file("n.json", '{"a": NaN}'), "is not JSON")):
            code, _, err = self.run_cli("--url", s.url, "enqueue", path)
            self.assertEqual(code, 2, err)
            self.assertIn(says, err)
        self.assertEqual(s.requests, [])

    def test_a_refused_token_and_no_daemon_exit_2(self) -> None:
        s = self.stand_in((401, {"WWW-Authenticate": 'Bearer realm="aer1-anchor"'}, error_body("unauthorized", "the bearer token is not valid")))
        self.assertEqual(self.run_cli("--url", s.url, "--token", "bad", "status", "k")[0], 2)
        code, _, err = self.run_cli("--url", f"http://127.0.0.1:{free_port()}", "status", "k")
        self.assertEqual(code, 2)
        self.assertIn("unreachable", err)

    def test_unknown_words_exit_2(self) -> None:
        self.assertEqual(self.run_cli("frobnicate")[0], 2)
        self.assertEqual(self.run_cli("wait", "k", "--until", "done")[0], 2)

    def test_not_found_exits_1_and_a_wait_that_times_out_exits_1(self) -> None:
        s = self.stand_in((404, {}, error_body("not_found", "no subject", "key")), (200, {}, json.dumps({"key": "k", "status": "pending"}).encode()))
        self.assertEqual(self.run_cli("--url", s.url, "status", "k")[0], 1)
        code, _, err = self.run_cli("--url", s.url, "wait", "k", "--timeout", "0")
        self.assertEqual(code, 1)
        self.assertIn("timeout:", err)

    def test_proof_attach_writes_the_document_with_anchor_proof(self) -> None:
        proof = {"format": "aer1-anchor-proof-v1", "status": "confirmed"}
        s = self.stand_in((200, {}, json.dumps(proof).encode()))
        path = self.file("r.json", json.dumps(RECEIPT))
        out = os.path.join(self.dir.name, "anchored.json")
        code, stdout, _ = self.run_cli("--url", s.url, "proof", "k", "--attach", path, "--out", out)
        self.assertEqual(code, 0)
        with open(out, encoding="utf-8") as f:
            self.assertEqual(json.load(f), {**RECEIPT, "anchor_proof": proof})
        self.assertIn("anchor_proof attached (status confirmed)", stdout)

    def test_proof_attach_to_an_array_exits_2(self) -> None:
        s = self.stand_in((200, {}, b"{}"))
        code, _, err = self.run_cli("--url", s.url, "proof", "k", "--attach", self.file("t.json", "[]"))
        self.assertEqual(code, 2)
        self.assertIn("must hold a JSON object", err)


class Compatibility(unittest.TestCase):
    def test_the_module_parses_as_python_3_9(self) -> None:
        with open(aer1_anchor.__file__, encoding="utf-8") as f:
            ast.parse(f.read(), feature_version=(3, 9))

    def test_only_the_standard_library_is_imported(self) -> None:
        with open(aer1_anchor.__file__, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        stdlib = getattr(sys, "stdlib_module_names", None)
        if stdlib is None:
            self.skipTest("sys.stdlib_module_names needs Python 3.10")
        self.assertEqual(sorted(n for n in names if n not in stdlib and n != "__future__"), [])


if __name__ == "__main__":
    unittest.main()
