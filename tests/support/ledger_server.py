"""A test MCP server: every tool execution appends to a ledger file (JSON lines) with the
idempotency key it was sent in `_meta`. Run over stdio (default) or streamable HTTP:

    python -m tests.support.ledger_server LEDGER [--http PORT]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations

LEDGER = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("LEDGER", "ledger.jsonl")

mcp = FastMCP("ledger", log_level="WARNING")


def _key(ctx: Context) -> str | None:  # type: ignore[type-arg]
    meta = ctx.request_context.meta
    if meta is None:
        return None
    extra = meta.model_extra or {}
    return extra.get("sophos/idempotency_key")


def _log(**entry: object) -> None:
    entry["pid"] = os.getpid()
    entry["t"] = time.time()
    with open(LEDGER, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")
        f.flush()
        os.fsync(f.fileno())


@mcp.tool(annotations=ToolAnnotations(destructiveHint=False, idempotentHint=True))
async def append(label: str, ctx: Context, delay: float = 0.0) -> str:  # type: ignore[type-arg]
    """Append a labelled line to the ledger after `delay` seconds."""
    key = _key(ctx)
    _log(event="start", label=label, key=key)
    await asyncio.sleep(delay)
    _log(event="done", label=label, key=key)
    return f"appended {label}"


@mcp.tool(annotations=ToolAnnotations(destructiveHint=True, idempotentHint=False))
async def charge(amount: int, ctx: Context, delay: float = 0.0) -> str:  # type: ignore[type-arg]
    """A destructive, non-idempotent call (think: a payment)."""
    key = _key(ctx)
    _log(event="start", label=f"charge-{amount}", key=key)
    await asyncio.sleep(delay)
    _log(event="done", label=f"charge-{amount}", key=key)
    return f"charged {amount}"


@mcp.tool()
async def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(reason)


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def report(size: int) -> str:
    """A long text of `size` characters that begins with BEGIN and ends with END."""
    body = "".join(f"line {i:06d} of the report\n" for i in range(size // 25 + 1))
    return "BEGIN\n" + body[: max(size - 10, 0)] + "\nEND"


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def whoami() -> str:
    """The server's pid (to see restarts)."""
    return str(os.getpid())


if __name__ == "__main__":
    if "--http" in sys.argv:
        mcp.settings.port = int(sys.argv[sys.argv.index("--http") + 1])
        mcp.settings.host = "127.0.0.1"
        mcp.run("streamable-http")
    else:
        mcp.run("stdio")
