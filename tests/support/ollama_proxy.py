"""An Ollama-protocol front for an OpenAI-compatible server (llama-server), for the real-model
suite (tests/model): `/api/chat` (NDJSON streaming), `/api/tags`, `/api/version`.

Why our own: no Ollama binary or model hub is reachable here, and the two PyPI proxies tried
speak the protocol only in part: ollama-proxy-plus 0.1.0 reports the prompt's *words* as
`prompt_eval_count` (every turn looked like a cut prompt), pocket-o-llama ends its stream with
a chunk that has no `message` (a validation error in Ollama's own client). This one maps what
Sophos sends and reads, as Ollama does it:
- `options.num_predict` -> `max_tokens`; `finish_reason: length` -> `done_reason: "length"`;
- the server's usage (asked for with `stream_options.include_usage`) -> `prompt_eval_count`
  and `eval_count`, token counts as Ollama reports them;
- `reasoning_content` deltas -> `message.thinking`; tool calls both ways (Ollama's have no
  ids: results are matched to calls in order, as Ollama's own templates do);
- an unknown model -> 404 `model "x" not found`; a server that is down -> 502 at once; a
  client that goes away closes the upstream request, so the server stops generating.
`options.num_ctx` is not forwarded: llama-server's context is fixed when it starts.

    python -m tests.support.ollama_proxy --upstream http://127.0.0.1:8081/v1 [--port N]
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx

from tests.support.fake_ollama import POLL, QuietServer


def to_openai(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending: list[str] = []  # ids of the latest assistant turn's calls, answered in order
    for n, m in enumerate(messages):
        role = m.get("role")
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            pending = []
            for i, c in enumerate(m["tool_calls"]):
                fn = c.get("function") or {}
                call_id = f"call_{n}_{i}"
                pending.append(call_id)
                calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": fn.get("name", ""), "arguments": json.dumps(fn.get("arguments") or {})},
                    }
                )
            out.append({"role": "assistant", "content": m.get("content") or "", "tool_calls": calls})
        elif role == "tool":
            out.append(
                {"role": "tool", "content": m.get("content") or "", "tool_call_id": pending.pop(0) if pending else f"call_{n}"}
            )
        else:
            out.append({"role": role, "content": m.get("content") or ""})
    return out


def sse_data(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        yield json.loads(data)


class Proxy:
    def __init__(self, upstream: str, port: int = 0, timeout: float = 300) -> None:
        self.upstream = upstream.rstrip("/")
        self.port = port
        self.client = httpx.Client(timeout=httpx.Timeout(timeout, connect=5))
        self.server: QuietServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def models(self) -> list[str]:
        response = self.client.get(f"{self.upstream}/models")
        response.raise_for_status()
        return [str(m.get("id")) for m in response.json().get("data", [])]

    def start(self) -> Proxy:
        proxy = self

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
                if self.path == "/api/version":
                    self._json(200, {"version": "0.0.0-sophos-test-proxy"})
                    return
                if self.path != "/api/tags":
                    self._json(404, {"error": "not found"})
                    return
                try:
                    names = proxy.models()
                except httpx.HTTPError as e:
                    self._json(502, {"error": f"upstream: {e}"})
                    return
                self._json(200, {"models": [{"name": n, "model": n} for n in names]})

            def do_POST(self) -> None:
                self._started = False  # one handler serves every request of a kept-alive connection
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if self.path != "/api/chat":
                    self._json(404, {"error": "not found"})
                    return
                model = str(body.get("model", ""))
                try:
                    if model not in proxy.models():
                        self._json(404, {"error": f'model "{model}" not found, try pulling it first'})
                        return
                    proxy.chat(self, body, model)
                except httpx.HTTPError as e:
                    if not self._started:
                        self._json(502, {"error": f"upstream: {type(e).__name__}: {e}"})
                    else:
                        self.close_connection = True  # mid-answer: the client sees the stream break
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            def chunk(self, line: dict[str, Any]) -> None:
                if not self._started:
                    self._started = True
                    self.send_response(200)
                    self.send_header("Content-Type", "application/x-ndjson")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                data = json.dumps(line).encode() + b"\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def end(self) -> None:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self.server = QuietServer(("127.0.0.1", self.port), Handler)
        self.server.nodelay = True
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(POLL,), daemon=True).start()
        return self

    def chat(self, handler: Any, body: dict[str, Any], model: str) -> None:
        options = body.get("options") or {}
        request: dict[str, Any] = {
            "model": model,
            "messages": to_openai(body.get("messages") or []),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if options.get("num_predict"):
            request["max_tokens"] = int(options["num_predict"])
        if body.get("tools"):
            request["tools"] = body["tools"]
        calls: dict[int, dict[str, Any]] = {}
        finish, usage = "stop", dict[str, Any]()
        with self.client.stream("POST", f"{self.upstream}/chat/completions", json=request) as response:
            if response.status_code != 200:
                text = response.read().decode(errors="replace")[:500]
                handler._json(response.status_code, {"error": text})
                return
            for event in sse_data(response.iter_lines()):
                usage = event.get("usage") or usage
                for choice in event.get("choices") or []:
                    delta = choice.get("delta") or {}
                    finish = choice.get("finish_reason") or finish
                    for c in delta.get("tool_calls") or []:
                        slot = calls.setdefault(int(c.get("index", 0)), {"name": "", "arguments": ""})
                        fn = c.get("function") or {}
                        slot["name"] += fn.get("name") or ""
                        slot["arguments"] += fn.get("arguments") or ""
                    message: dict[str, Any] = {"role": "assistant", "content": delta.get("content") or ""}
                    if delta.get("reasoning_content"):
                        message["thinking"] = delta["reasoning_content"]
                    if message["content"] or "thinking" in message:
                        handler.chunk({"model": model, "created_at": now(), "message": message, "done": False})
        if calls:
            tool_calls = [
                {"function": {"index": i, "name": c["name"], "arguments": _args(c["arguments"])}}
                for i, c in sorted(calls.items())
            ]
            handler.chunk(
                {
                    "model": model,
                    "created_at": now(),
                    "message": {"role": "assistant", "content": "", "tool_calls": tool_calls},
                    "done": False,
                }
            )
        handler.chunk(
            {
                "model": model,
                "created_at": now(),
                "message": {"role": "assistant", "content": ""},
                "done": True,
                "done_reason": "length" if finish == "length" else "stop",
                "prompt_eval_count": int(usage.get("prompt_tokens") or 0),
                "eval_count": int(usage.get("completion_tokens") or 0),
            }
        )
        handler.end()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        self.client.close()


def _args(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def main() -> None:
    parser = argparse.ArgumentParser(description="an Ollama-protocol front for an OpenAI-compatible server")
    parser.add_argument("--upstream", required=True, help="the server's OpenAI base URL, e.g. http://127.0.0.1:8081/v1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    proxy = Proxy(args.upstream, args.port).start()
    print(proxy.url, flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
