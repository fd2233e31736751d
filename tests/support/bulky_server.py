"""A test MCP server whose answers are as big as asked: `big` returns `size` characters,
`noisy` first writes `size` bytes to stderr without a newline. Run over stdio."""

from __future__ import annotations

import sys

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

mcp = FastMCP("bulky", log_level="WARNING")
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True)


@mcp.tool(annotations=READ_ONLY)
def big(size: int) -> str:
    """`size` characters."""
    return "x" * size


@mcp.tool(annotations=READ_ONLY)
def noisy(size: int) -> str:
    """Write `size` bytes to stderr, no newline, then answer."""
    block = b"e" * (1 << 20)
    for _ in range(size >> 20):
        sys.stderr.buffer.write(block)
    sys.stderr.buffer.flush()
    return "said a lot"


if __name__ == "__main__":
    mcp.run()
