"""A fake OpenAI-compatible server: streaming /v1/chat/completions (SSE) and /v1/models.

Replies: {"text": "..."}; {"tool_calls": [(name, args), ...]}; {"status": 404}; {"stall": s};
{"loop": "word ", "count": N} (the token N times, for ever when N is None; the request's
`max_tokens` is ignored unless "honour_limit", then it ends there with finish_reason "length").
`streamed` counts the tokens written to clients.
{"reasoning": "..."} streams that first as `reasoning_content` deltas (llama-server's default
reasoning format). A request with `stream_options.include_usage` gets a last chunk with no
choices and the usage (prompt tokens by fake_ollama's tokenizer), as llama-server sends it;
`refuse_stream_options` answers such a request 400 instead, as a strict server would.
Tool calls are numbered `call_0`, `call_1`, ... in each response, as llama.cpp and vLLM number
them; {"ids": [...]} gives them other ids ("" for none, one id twice).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.embedding import concept_values
from tests.support.fake_ollama import POLL, prompt_tokens


class FakeOpenAI:
    def __init__(self, replies: list[dict[str, Any]] | None = None, models: tuple[str, ...] = ("local-model",)) -> None:
        self.replies = list(replies or [])
        self.models = models
        self.requests: list[dict[str, Any]] = []
        self.streamed = 0
        self.refuse_stream_options = False
        self.streamed_now = 0  # tokens of the answer being written (one answer at a time)
        self.server: ThreadingHTTPServer | None = None
        self.trained: int | None = None  # llama.cpp's /models `meta.n_ctx_train`
        self.slot_window: int | None = None  # llama.cpp's /props `default_generation_settings.n_ctx`

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def start(self) -> FakeOpenAI:
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
                if self.path == "/v1/models":
                    meta = {"meta": {"n_ctx_train": fake.trained}} if fake.trained else {}
                    self._json(200, {"object": "list", "data": [{"id": m, "object": "model", **meta} for m in fake.models]})
                elif self.path == "/props" and fake.slot_window:
                    self._json(200, {"default_generation_settings": {"n_ctx": fake.slot_window}, "total_slots": 1})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if self.path == "/v1/embeddings":  # tests/support/embedding.py's vectors, last first in the list
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    data = [{"object": "embedding", "index": i, "embedding": concept_values(t)} for i, t in enumerate(texts)]
                    self._json(200, {"object": "list", "data": data[::-1], "model": body.get("model")})
                    return
                fake.requests.append(body)
                if fake.refuse_stream_options and "stream_options" in body:
                    self._json(
                        400,
                        {
                            "error": {
                                "message": "Unrecognized request argument supplied: stream_options",
                                "type": "invalid_request_error",
                            }
                        },
                    )
                    return
                reply = fake.replies.pop(0) if fake.replies else {"text": "Done."}
                if reply.get("status") == 404 or body.get("model") not in fake.models:
                    self._json(
                        404, {"error": {"message": f"model {body.get('model')} not found", "type": "invalid_request_error"}}
                    )
                    return
                if "stall" in reply:
                    time.sleep(float(reply["stall"]))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    limit = body.get("max_tokens") if reply.get("honour_limit") else None
                    usage = (body.get("stream_options") or {}).get("include_usage") is True
                    for chunk in fake.chunks(body["model"], reply, limit, prompt_tokens(body) if usage else None):
                        data = f"data: {json.dumps(chunk)}\n\n".encode()
                        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                        self.wfile.flush()
                    done = b"data: [DONE]\n\n"
                    self.wfile.write(f"{len(done):x}\r\n".encode() + done + b"\r\n0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(POLL,), daemon=True).start()
        return self

    def tokens(self, reply: dict[str, Any], limit: int | None) -> Iterator[str]:
        if "loop" in reply:
            count, n = reply.get("count"), 0
            while (count is None or n < count) and (limit is None or n < limit):
                yield str(reply["loop"])
                n += 1
            return
        words = str(reply.get("text", "")).split(" ") if reply.get("text") else []
        for i, word in enumerate(words[:limit]):
            yield word if i == len(words) - 1 else word + " "

    def chunks(
        self, model: str, reply: dict[str, Any], limit: int | None = None, prompt: int | None = None
    ) -> Iterator[dict[str, Any]]:
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model}
        yield from self._choices(base, reply, limit)
        if prompt is not None:
            completion = self.streamed_now
            yield {
                **base,
                "choices": [],
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
            }

    def _choices(self, base: dict[str, Any], reply: dict[str, Any], limit: int | None) -> Iterator[dict[str, Any]]:
        yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
        self.streamed_now = 0
        for word in str(reply.get("reasoning") or "").split(" ") if reply.get("reasoning") else []:
            yield {**base, "choices": [{"index": 0, "delta": {"reasoning_content": word + " "}, "finish_reason": None}]}
        n = 0
        for token in self.tokens(reply, limit):
            n += 1
            yield {**base, "choices": [{"index": 0, "delta": {"content": token}, "finish_reason": None}]}
            self.streamed += 1
            self.streamed_now = n
        if limit is not None and n >= limit:
            yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}
            return
        ids = reply.get("ids") or [f"call_{i}" for i in range(len(reply.get("tool_calls") or []))]
        for i, (name, args) in enumerate(reply.get("tool_calls") or []):
            call = {"index": i, "id": ids[i], "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            yield {**base, "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}
        finish = "tool_calls" if reply.get("tool_calls") else "stop"
        yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


@contextmanager
def fake_openai(replies: list[dict[str, Any]] | None = None, **kw: Any) -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI(replies, **kw).start()
    try:
        yield fake
    finally:
        fake.stop()
