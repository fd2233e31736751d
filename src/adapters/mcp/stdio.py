"""A stdio MCP session whose server's stderr goes to this process's log, not the terminal.

Servers write banners and diagnostics to stderr (the Memory server says "running on stdio");
inherited, those lines land in the middle of a CLI answer. Here each line is logged at INFO
under the server's name, so it shows with `-v` (and in the server log) and nowhere else."""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TextIO

from langchain_mcp_adapters.sessions import create_session
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

log = logging.getLogger(__name__)

_BRACED = re.compile(r"\$\{(\w+)\}")


class ServerStderr:
    """A pipe for a server's stderr and a thread that logs what comes out of it."""

    def __init__(self, name: str) -> None:
        read_fd, write_fd = os.pipe()
        self.writer: TextIO = os.fdopen(write_fd, "w")
        reader = os.fdopen(read_fd, "r", errors="replace")
        self._thread = threading.Thread(target=self._pump, args=(name, reader), name=f"mcp-stderr-{name}", daemon=True)
        self._thread.start()

    @staticmethod
    def _pump(name: str, reader: TextIO) -> None:
        with reader:
            for line in reader:  # ends when every writer (the server and its children) has closed
                if line.strip():
                    log.info("MCP server %s: %s", name, line.rstrip())

    def close(self) -> None:
        """Our copy of the write end; the server keeps its own until it exits."""
        self.writer.close()


@asynccontextmanager
async def open_session(name: str, connection: dict[str, Any]) -> AsyncIterator[ClientSession]:
    """A session to one configured server (stdio or streamable HTTP)."""
    if connection.get("transport") != "stdio":
        async with create_session(connection) as session:  # type: ignore[arg-type]
            yield session
        return
    env = connection.get("env")
    params = StdioServerParameters(
        command=connection["command"],
        args=connection["args"],
        env={k: _BRACED.sub(lambda m: os.environ.get(m[1], m[0]), v) for k, v in env.items()} if env else None,
    )
    stderr = ServerStderr(name)
    try:
        async with stdio_client(params, errlog=stderr.writer) as (read, write), ClientSession(read, write) as session:
            yield session
    finally:
        stderr.close()
