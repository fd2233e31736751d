"""A test MCP server: every tool execution appends to a ledger file (JSON lines) with the
idempotency key it was sent in `_meta`. Run over stdio (default) or streamable HTTP:

    python -m tests.support.ledger_server LEDGER [--http PORT]

The suite starts it about 170 times, mostly over stdio, where it speaks MCP's JSON-RPC
itself: importing the `mcp` package alone costs 0.45 s of CPU, ten times the rest of a
start. Sophos's side is the SDK's client, which validates every answer against the
protocol's types. Over HTTP the tools are served by the SDK's own server
(`mcp.server.lowlevel` with its streamable-HTTP session manager).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import os
import sys
import threading
import time
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

LEDGER = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("LEDGER", "ledger.jsonl")
KEY = "sophos/idempotency_key"
PROTOCOL = "2025-06-18"  # answered when the client asks for one this server does not know
KNOWN = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}
JSON_TYPES = {str: "string", int: "integer", float: "number"}


@dataclass(frozen=True)
class Tool:
    run: Callable[..., Awaitable[str]]  # the tool's arguments, and `key`: the call's idempotency key
    annotations: dict[str, bool]

    @property
    def params(self) -> dict[str, inspect.Parameter]:
        return {n: p for n, p in inspect.signature(self.run).parameters.items() if n != "key"}

    def listing(self, name: str) -> dict[str, Any]:
        hints = typing.get_type_hints(self.run)
        schema = {
            "type": "object",
            "properties": {n: {"type": JSON_TYPES[hints[n]]} for n in self.params},
            "required": [n for n, p in self.params.items() if p.default is inspect.Parameter.empty],
        }
        listed = {"name": name, "description": inspect.getdoc(self.run) or "", "inputSchema": schema}
        return listed | ({"annotations": self.annotations} if self.annotations else {})

    async def call(self, arguments: dict[str, Any], key: str | None) -> str:
        hints = typing.get_type_hints(self.run)
        unknown = set(arguments) - set(self.params)
        missing = {n for n, p in self.params.items() if p.default is inspect.Parameter.empty} - set(arguments)
        if unknown or missing:
            raise ValueError(f"unknown arguments {sorted(unknown)}, missing {sorted(missing)}")
        return await self.run(key=key, **{n: hints[n](v) for n, v in arguments.items()})


TOOLS: dict[str, Tool] = {}


def tool(**annotations: bool) -> Callable[[Callable[..., Awaitable[str]]], Callable[..., Awaitable[str]]]:
    def register(run: Callable[..., Awaitable[str]]) -> Callable[..., Awaitable[str]]:
        TOOLS[run.__name__] = Tool(run, annotations)
        return run

    return register


def _log(**entry: object) -> None:
    entry["pid"] = os.getpid()
    entry["t"] = time.time()
    with open(LEDGER, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")
        f.flush()
        os.fsync(f.fileno())


@tool(destructiveHint=False, idempotentHint=True)
async def append(label: str, key: str | None, delay: float = 0.0) -> str:
    """Append a labelled line to the ledger after `delay` seconds."""
    _log(event="start", label=label, key=key)
    await asyncio.sleep(delay)
    _log(event="done", label=label, key=key)
    return f"appended {label}"


@tool(destructiveHint=True, idempotentHint=False)
async def charge(amount: int, key: str | None, delay: float = 0.0) -> str:
    """A destructive, non-idempotent call (think: a payment)."""
    _log(event="start", label=f"charge-{amount}", key=key)
    await asyncio.sleep(delay)
    _log(event="done", label=f"charge-{amount}", key=key)
    return f"charged {amount}"


@tool()
async def fail(reason: str, key: str | None) -> str:
    """Always fails."""
    raise ValueError(reason)


@tool(readOnlyHint=True)
async def report(size: int, key: str | None) -> str:
    """A long text of `size` characters that begins with BEGIN and ends with END."""
    body = "".join(f"line {i:06d} of the report\n" for i in range(size // 25 + 1))
    return "BEGIN\n" + body[: max(size - 10, 0)] + "\nEND"


@tool(readOnlyHint=True)
async def whoami(key: str | None) -> str:
    """The server's pid (to see restarts)."""
    return str(os.getpid())


async def outcome(name: str, arguments: dict[str, Any], key: str | None) -> dict[str, Any]:
    """A tools/call result: a tool's failure is a result with isError, as MCP asks."""
    found = TOOLS.get(name)
    try:
        if found is None:
            raise ValueError(f"Unknown tool: {name}")
        text, failed = await found.call(arguments, key), False
    except Exception as e:  # noqa: BLE001 - told to the client, as the SDK's servers do
        text, failed = f"Error executing tool {name}: {e}", True
    return {"content": [{"type": "text", "text": text}], "isError": failed}


class StdioSession:
    """MCP over stdio: one JSON-RPC message per line; each request is answered from a task
    of its own (a slow call does not hold the others up) unless the client cancels it."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.lines: asyncio.Queue[bytes] = asyncio.Queue()
        self.running: dict[Any, asyncio.Task[None]] = {}

    def read(self) -> None:  # on a thread: stdin may be any file, and a read blocks
        for line in sys.stdin.buffer:
            self.loop.call_soon_threadsafe(self.lines.put_nowait, line)
        self.loop.call_soon_threadsafe(self.lines.put_nowait, b"")

    def send(self, message: dict[str, Any]) -> None:
        sys.stdout.buffer.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        sys.stdout.buffer.flush()

    async def serve(self) -> None:
        threading.Thread(target=self.read, daemon=True).start()
        while line := await self.lines.get():
            try:
                message = json.loads(line)
            except ValueError:
                self.send({"id": None, "error": {"code": -32700, "message": "Parse error"}})
                continue
            method, params = message.get("method"), message.get("params") or {}
            if "id" not in message:
                if method == "notifications/cancelled" and params.get("requestId") in self.running:
                    self.running[params["requestId"]].cancel()
                continue  # notifications/initialized and the rest need no answer
            task = asyncio.create_task(self.answer(message["id"], method, params))
            self.running[message["id"]] = task
            task.add_done_callback(functools.partial(self.finished, message["id"]))

    def finished(self, rid: Any, _: asyncio.Task[None]) -> None:
        self.running.pop(rid, None)

    async def answer(self, rid: Any, method: str | None, params: dict[str, Any]) -> None:
        if method == "initialize":
            asked = params.get("protocolVersion")
            result: dict[str, Any] = {
                "protocolVersion": asked if asked in KNOWN else PROTOCOL,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "ledger", "version": "1.0"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": [t.listing(name) for name, t in TOOLS.items()]}
        elif method == "tools/call":
            key = (params.get("_meta") or {}).get(KEY)
            result = await outcome(str(params.get("name")), params.get("arguments") or {}, key)
        else:
            self.send({"id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})
            return
        self.send({"id": rid, "result": result})


async def serve_stdio() -> None:
    await StdioSession().serve()


def serve_http(port: int) -> None:
    """The same tools over streamable HTTP at /mcp, served by the MCP SDK."""
    import contextlib
    from collections.abc import AsyncIterator

    import uvicorn
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Route
    from starlette.types import Receive, Scope, Send

    server: Server[Any, Any] = Server("ledger")

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return [types.Tool.model_validate(t.listing(name)) for name, t in TOOLS.items()]

    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        meta = server.request_context.meta
        key = (meta.model_extra or {}).get(KEY) if meta is not None else None
        return types.CallToolResult.model_validate(await outcome(name, arguments, key))

    sessions = StreamableHTTPSessionManager(server)

    class Endpoint:  # an ASGI app: Starlette hands a plain function a Request instead
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            await sessions.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with sessions.run():
            yield

    app = Starlette(routes=[Route("/mcp", endpoint=Endpoint())], lifespan=lifespan)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if "--http" in sys.argv:
        serve_http(int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        asyncio.run(serve_stdio())
