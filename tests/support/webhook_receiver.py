"""A real local webhook receiver (an HTTP server on 127.0.0.1 in a thread) for the tests: it
checks each call's X-Sophos-Signature with the secret it is given, processes each delivery
id once (as a receiver should: it may see an id again after a crash) and counts.

Paths choose how it answers: `/ok` 200; `/fail-once` 500 the first time a delivery id comes,
200 after; `/redirect` 302 to `/ok`; `/big` 200 with a body that never ends; `/slow` no
answer until the receiver closes; `/err` 500 always."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self, secret: str = "") -> None:
        self.secret = secret
        self.lock = threading.Lock()
        self.arrivals: Counter[str] = Counter()  # delivery id -> calls that arrived
        self.processed: dict[str, dict[str, Any]] = {}  # delivery id -> body, processed once
        self.bad_signatures = 0
        self.paths: list[str] = []
        self.closing = threading.Event()
        self.arrived = threading.Condition(self.lock)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                if len(body) < length:
                    return  # the sender went away mid-call (a kill): nothing arrived
                receiver.paths.append(self.path)
                if self.path.startswith("/slow"):
                    receiver.closing.wait(30)
                    return
                status = receiver.take(self.path, body, self.headers.get("X-Sophos-Signature", ""), self.headers)
                if self.path.startswith("/redirect"):
                    self.send_response(302)
                    self.send_header("Location", "/ok")
                    self.end_headers()
                    return
                self.send_response(status)
                if self.path.startswith("/big") and status == 200:
                    self.end_headers()
                    chunk = b"x" * 65536
                    try:
                        for _ in range(16_000):  # a gigabyte at most, should the reader never stop
                            self.wfile.write(chunk)
                    except OSError:
                        pass
                    return
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def take(self, path: str, body: bytes, signed: str, headers: Any) -> int:
        expected = "sha256=" + hmac.new(self.secret.encode(), body, hashlib.sha256).hexdigest()
        delivery = headers.get("X-Sophos-Delivery", "")
        with self.lock:
            if self.secret and not hmac.compare_digest(signed, expected):
                self.bad_signatures += 1
                return 401
            self.arrivals[delivery] += 1
            self.arrived.notify_all()
            if path.startswith("/err") or (path.startswith("/fail-once") and self.arrivals[delivery] == 1):
                return 500
            if delivery not in self.processed:  # processed once, however often it arrives
                self.processed[delivery] = json.loads(body)
            return 200

    def url(self, path: str = "/ok") -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()
