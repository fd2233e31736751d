"""A fake Ollama HTTP server speaking the real wire protocol (NDJSON streaming /api/chat,
/api/tags), serving scripted replies and recording every request.

Reply forms (dicts): {"text": "..."}; {"tool_calls": [(name, args), ...], "text": ""};
{"status": 404} (unknown model); {"stall": seconds} (no byte before that); {"error": "..."}
(an error line mid-stream); {"loop": "word ", "count": N} (the token "word " N times, for
ever when N is None: a model in a repetition loop; with "honour_limit" it stops at the
request's `num_predict` with done_reason "length", as Ollama does, otherwise it ignores it).
"token_delay" slows the stream down per token; "before" is a callable run when the reply is
served; {"thinking": "...", "text": "..."} streams the thinking first (as `message.thinking`
when the request asks `think: true`, as Ollama does; not at all otherwise). `streamed` counts the tokens written to clients.
When the script runs out, `default` answers (a short text). `reported` keeps the
counts each final line reported, for usage totals to be compared with.

Every final line reports `prompt_eval_count` as a real server would: the prompt's tokens by
the fake's own count (`prompt_tokens`, about 3 characters a token, so a client's estimate
needs calibrating), capped at the context it runs with (`options.num_ctx`, or `window` when
set: a server that cuts the prompt, as Ollama does, silently).

/api/tags lists `models` with a size and family; /api/show describes each (`capabilities`,
by default completion and tools, plus what `capabilities` maps a model to; `model_info`
with `contexts`' context length when one is given) and records the names asked for in
`shown`. Only /api/chat requests go into `requests`.

`nodelay=True` sets TCP_NODELAY on accepted sockets, as real Ollama (Go) does: without it each
small chunk waits for the client's delayed ACK (~40 ms), which dominates a zero-latency model.
`python -m tests.support.fake_ollama --port N` serves one in a process of its own.

/api/embed answers each `input` with tests/support/embedding.py's deterministic vector (for
the models of `embedders`; 404 for another), and keeps the texts in `embedded`.
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.embedding import concept_values

# how often the serving thread looks for shutdown(): the default 0.5 s added up to 0.5 s to
# every test that stops a fake
POLL = 0.02


class QuietServer(ThreadingHTTPServer):
    request_queue_size = 128  # the default 5 drops connections when many runs call at once
    nodelay = False
    accepted = 0  # connections opened by clients so far

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client killed mid-request (the crash tests do that) is not news

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, addr = super().get_request()
        self.accepted += 1
        if self.nodelay:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, addr


class FakeOllama:
    def __init__(
        self,
        replies: list[dict[str, Any]] | None = None,
        models: tuple[str, ...] = ("qwen3:latest",),
        nodelay: bool = False,
        port: int = 0,
    ) -> None:
        self.nodelay = nodelay
        self.port = port
        self.replies = list(replies or [])
        self.models = models
        self.capabilities: dict[str, list[str]] = {}  # model -> capabilities beyond completion and tools
        self.contexts: dict[str, int] = {}  # model -> context length /api/show reports
        self.shown: list[str] = []
        self.lists_capabilities = True  # False: /api/show without `capabilities`, as Ollama before 0.6.4
        self.requests: list[dict[str, Any]] = []
        self.embedders: tuple[str, ...] = ("fake-embed",)  # the models /api/embed serves
        self.embedded: list[str] = []  # every text /api/embed was asked for
        self.record = True  # False: keep no request (a long benchmark would grow the list)
        self.default: dict[str, Any] = {"text": "Done."}
        # when set, answers every request the script does not: (request body) -> reply
        self.responder: Any = None
        self.latency = 0.0  # seconds before any reply (lets a test attach to a run in time)
        self.window: int | None = None  # context the server runs with, whatever num_ctx says
        # reports the prompt's words as prompt_eval_count, as an Ollama-protocol proxy in front
        # of an OpenAI-compatible server was seen doing (ollama-proxy-plus 0.1.0)
        self.count_words = False
        self.dropped = 0  # replies cut short because the client closed the connection
        self.streamed = 0  # tokens written to clients
        self.reported: list[tuple[int, int]] = []  # (prompt_eval_count, eval_count) of each final line written
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def next_reply(self, body: dict[str, Any] | None = None) -> dict[str, Any]:
        with self.lock:
            if self.replies:
                return self.replies.pop(0)
        if self.responder is not None:
            return dict(self.responder(body or {}))
        return dict(self.default)

    def add(self, *replies: dict[str, Any]) -> None:
        with self.lock:
            self.replies.extend(replies)

    def start(self) -> FakeOllama:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/api/tags":
                    listed = [
                        {"name": m, "model": m, "size": 1000 + i, "details": {"family": m.split(":")[0]}}
                        for i, m in enumerate(fake.models)
                    ]
                    self._json(200, {"models": listed})
                elif self.path == "/api/version":
                    self._json(200, {"version": "0.0.0-fake"})
                else:
                    self._json(404, {"error": "not found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                aside = {
                    "/api/show": lambda: self._show(str(body.get("model") or body.get("name") or "")),
                    "/api/embed": lambda: self._json(*fake.embed_answer(body)),
                }.get(self.path)
                if aside is not None:  # not a chat: not recorded
                    aside()
                    return
                if fake.record:
                    with fake.lock:
                        fake.requests.append(body)
                if self.path != "/api/chat":
                    self._json(404, {"error": "not found"})
                    return
                reply = fake.next_reply(body)
                if fake.latency:
                    time.sleep(fake.latency)
                if callable(reply.get("before")):
                    reply["before"]()
                model = body.get("model", "qwen3")
                if reply.get("status") == 404 or model not in {m.split(":")[0] for m in fake.models} | set(fake.models):
                    self._json(404, {"error": f'model "{model}" not found, try pulling it first'})
                    return
                if "stall" in reply:
                    time.sleep(float(reply["stall"]))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    limit = (body.get("options") or {}).get("num_predict") if reply.get("honour_limit") else None
                    for line in fake.lines(model, reply, fake.evaluated(body), limit, think=body.get("think") is True):
                        self._chunk(json.dumps(line).encode() + b"\n")
                        if reply.get("token_delay"):
                            time.sleep(float(reply["token_delay"]))
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    with fake.lock:
                        fake.dropped += 1

            def _show(self, name: str) -> None:
                fake.shown.append(name)
                known = {m: m for m in fake.models} | {m.split(":")[0]: m for m in fake.models}
                if name not in known:
                    self._json(404, {"error": f"model '{name}' not found"})
                    return
                full = known[name]
                caps = ["completion", "tools", *fake.capabilities.get(full, fake.capabilities.get(name, []))]
                family = full.split(":")[0]
                info = {f"{family}.context_length": fake.contexts[full]} if full in fake.contexts else {}
                shown = {"capabilities": caps} if fake.lists_capabilities else {}
                self._json(200, {**shown, "model_info": info, "details": {"family": family}})

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

        self.server = QuietServer(("127.0.0.1", self.port), Handler)
        self.server.nodelay = self.nodelay
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(POLL,), daemon=True).start()
        return self

    def embed_answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """/api/embed's status and body for a request."""
        model, texts = body.get("model"), body.get("input")
        if model not in self.embedders:
            return 404, {"error": f'model "{model}" not found, try pulling it first'}
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        with self.lock:
            self.embedded.extend(texts)
        return 200, {"model": model, "embeddings": [concept_values(t) for t in texts]}

    def evaluated(self, body: dict[str, Any]) -> int:
        """The prompt tokens the server evaluates: all of them, or the context it runs with."""
        if self.count_words:
            return sum(len(str(m.get("content") or "").split()) for m in body.get("messages") or [])
        window = self.window or (body.get("options") or {}).get("num_ctx") or 2048
        return min(prompt_tokens(body), int(window))

    def tokens(self, reply: dict[str, Any], limit: int | None) -> Iterator[str]:
        if "loop" in reply:
            count = reply.get("count")
            n = 0
            while (count is None or n < count) and (limit is None or n < limit):
                yield str(reply["loop"])
                n += 1
            return
        words = str(reply.get("text", "")).split(" ") if reply.get("text") else []
        for i, word in enumerate(words[:limit]):
            yield word if i == len(words) - 1 else word + " "

    def lines(
        self, model: str, reply: dict[str, Any], evaluated: int = 10, limit: int | None = None, think: bool = False
    ) -> Iterator[dict[str, Any]]:
        now = "2026-12-02T00:00:00Z"
        n = 0
        if think and reply.get("thinking"):
            for word in str(reply["thinking"]).split(" "):
                n += 1
                message = {"role": "assistant", "content": "", "thinking": word + " "}
                yield {"model": model, "created_at": now, "message": message, "done": False}
        for token in self.tokens(reply, limit):
            n += 1
            yield {"model": model, "created_at": now, "message": {"role": "assistant", "content": token}, "done": False}
            self.streamed += 1
        if reply.get("error"):
            yield {"error": reply["error"]}
            return
        calls = reply.get("tool_calls") or []
        if calls:
            yield {
                "model": model,
                "created_at": now,
                "message": {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"function": {"index": i, "name": name, "arguments": args}} for i, (name, args) in enumerate(calls)
                    ],
                },
                "done": False,
            }
        with self.lock:
            self.reported.append((evaluated, max(n, 1)))
        yield {
            "model": model,
            "created_at": now,
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "length" if limit is not None and n >= limit else "stop",
            "total_duration": 1000,
            "prompt_eval_count": evaluated,
            "eval_count": max(n, 1),
            "eval_duration": 1000,
        }

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def prompt_tokens(body: dict[str, Any]) -> int:
    """The fake's tokenizer: about 3 characters a token, plus a few per message, over the
    messages, their tool calls and the tool definitions."""
    chars = len(json.dumps(body.get("tools") or []))
    count = 0
    for m in body.get("messages") or []:
        chars += len(str(m.get("content") or "")) + len(json.dumps(m.get("tool_calls") or []))
        count += 5
    return count + chars // 3


@contextmanager
def fake_ollama(replies: list[dict[str, Any]] | None = None, **kwargs: Any) -> Iterator[FakeOllama]:
    fake = FakeOllama(replies, **kwargs).start()
    try:
        yield fake
    finally:
        fake.stop()


def main() -> None:
    """Serve until killed; print the URL once listening."""
    parser = argparse.ArgumentParser(description="a fake Ollama in a process of its own")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--text", default="Done.", help="the answer to every request")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--nodelay", action="store_true", help="TCP_NODELAY on accepted sockets")
    parser.add_argument("--loop", help="answer this token over and over (a model in a repetition loop)")
    parser.add_argument("--count", type=int, default=None, help="with --loop: how many times (default: for ever)")
    args = parser.parse_args()
    fake = FakeOllama(nodelay=args.nodelay, port=args.port)
    fake.default = {"loop": args.loop, "count": args.count} if args.loop else {"text": args.text}
    fake.latency = args.latency
    fake.record = False
    fake.start()
    print(fake.url, flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
