"""ToolPort over MCP servers: one live session per server for the life of the process.

langchain-mcp-adapters' `get_tools()` opens a new session (a new process, for stdio) for
every tool call; here each server's session is held open by a task of its own (anyio
scopes must close in the task that opened them) and calls share it. A server that cannot
start is left out. A broken session is restarted and the call sent again only when that
cannot run it twice: the request never left this process, or the tool is read-only or
idempotent. Otherwise the call ends with ToolOutcomeUnknown and the user decides.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, types
from mcp.shared.exceptions import McpError
from mcp.types import CONNECTION_CLOSED

from adapters.mcp.config import McpConfigError, load_mcp_config
from adapters.mcp.stdio import open_session
from domain.errors import ToolOutcomeUnknown
from ports.tools import ToolOutcome, ToolPort, ToolServerStatus, ToolSpec

log = logging.getLogger(__name__)

SEP = "__"
IDEMPOTENCY_META = "sophos/idempotency_key"
START_TIMEOUT = 30.0
RETRY_AFTER = 10.0  # seconds before a server that failed to start is tried again


class ServerUnavailable(Exception):
    """Raised when an MCP server cannot be started or reached."""


class McpServer:
    """One configured server and its live session."""

    def __init__(self, name: str, connection: dict[str, Any], call_timeout: float) -> None:
        self.name = name
        self.connection = connection
        self.call_timeout = call_timeout
        self.session: ClientSession | None = None
        self.tools: list[ToolSpec] = []
        self.error: str | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()
        self.restarts = 0

    async def _hold(self, ready: asyncio.Future[ClientSession]) -> None:
        try:
            async with open_session(self.name, self.connection) as session:
                await session.initialize()
                ready.set_result(session)
                await self._stop.wait()
        except BaseException as e:  # noqa: BLE001 - reported to the waiting starter
            if not ready.done():
                ready.set_exception(ServerUnavailable(f"{type(e).__name__}: {e}"))
            elif not isinstance(e, asyncio.CancelledError):
                log.warning("MCP server %s: session ended: %s", self.name, e)
        finally:
            self.session = None

    async def start(self) -> None:
        """Open the session and discover the tools."""
        self._stop = asyncio.Event()
        ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        self._holder = asyncio.create_task(self._hold(ready), name=f"mcp-{self.name}")
        try:
            session = await asyncio.wait_for(asyncio.shield(ready), START_TIMEOUT)
            listed = await session.list_tools()
        except BaseException as e:
            await self.stop()
            self.error = str(e) or type(e).__name__
            raise ServerUnavailable(self.error) from e
        self.session, self.error = session, None
        self.tools = [self._spec(t) for t in listed.tools]
        log.info("MCP server %s: %d tool(s)", self.name, len(self.tools))

    def _spec(self, tool: types.Tool) -> ToolSpec:
        a = tool.annotations
        return ToolSpec(
            name=f"{self.name}{SEP}{tool.name}",
            description=tool.description or "",
            parameters=dict(tool.inputSchema or {"type": "object", "properties": {}}),
            read_only=bool(a and a.readOnlyHint),
            destructive=not (a and a.destructiveHint is False),
            idempotent=bool(a and a.idempotentHint),
        )

    @property
    def target(self) -> str:
        """What is started or called: the command line (stdio) or the URL (HTTP)."""
        c = self.connection
        return str(c["url"]) if "url" in c else " ".join([str(c["command"]), *map(str, c.get("args", []))])

    def spec(self, tool: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == f"{self.name}{SEP}{tool}"), None)

    async def stop(self) -> None:
        self._stop.set()
        holder, self._holder = self._holder, None
        if holder is not None and not holder.done():
            try:
                await asyncio.wait_for(holder, 5.0)
            except (TimeoutError, asyncio.CancelledError, Exception):
                holder.cancel()
        self.session = None

    async def restart(self) -> None:
        async with self._lock:
            await self.stop()
            self.restarts += 1
            await self.start()

    async def call(self, tool: str, args: Mapping[str, Any], key: str) -> types.CallToolResult:
        session = self.session
        if session is None:
            await self.restart()
            session = self.session
        assert session is not None
        return await session.call_tool(
            tool,
            dict(args),
            read_timeout_seconds=timedelta(seconds=self.call_timeout),
            meta={IDEMPOTENCY_META: key},
        )


def _text(result: types.CallToolResult) -> str:
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.EmbeddedResource) and isinstance(block.resource, types.TextResourceContents):
            parts.append(block.resource.text)
        else:
            parts.append(f"[{block.type} content]")
    if not parts and result.structuredContent is not None:
        import json

        parts.append(json.dumps(result.structuredContent, ensure_ascii=False))
    return "\n".join(parts)


def _session_lost(e: McpError) -> bool:
    # stdio: the pipe closed; streamable HTTP: the server restarted and forgot the session
    return e.error.code == CONNECTION_CLOSED or _session_unknown(e)


def _session_unknown(e: McpError) -> bool:
    # HTTP 404 for the session id: the server refused the request without running it
    return e.error.message == "Session terminated"


def _never_sent(e: BaseException) -> bool:
    """Whether a broken session failed the call before the request was handed to the
    transport (the session had already seen its server go) or the server refused it unread.
    A CONNECTION_CLOSED answer, by contrast, comes to a request already written."""
    if isinstance(e, McpError):
        return _session_unknown(e)
    return isinstance(e, (anyio.ClosedResourceError, anyio.BrokenResourceError))


_BROKEN = (McpError, anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)


class McpToolbox(ToolPort):
    def __init__(
        self, config_dir: Path, memory_file: Path, call_timeout: float = 120.0, retry_after: float = RETRY_AFTER
    ) -> None:
        self.config_dir = config_dir
        self.memory_file = memory_file
        self.call_timeout = call_timeout
        self.retry_after = retry_after
        self.servers: dict[str, McpServer] = {}
        self.config_error: str | None = None
        self._discovered = False
        self._last_attempt = 0.0
        self._lock = asyncio.Lock()

    async def _discover(self) -> None:
        """Start every configured server once; retry the failed ones (re-reading mcp.json)
        on a later call. Concurrent first callers share one attempt."""
        loop = asyncio.get_running_loop()
        if self._discovered:
            healthy = all(s.session for s in self.servers.values()) and not self.config_error
            if healthy or loop.time() - self._last_attempt < self.retry_after:
                return
        async with self._lock:
            self._last_attempt = loop.time()
            try:
                config = load_mcp_config(self.config_dir, self.memory_file)
                self.config_error = None
            except McpConfigError as e:
                self.config_error = str(e)
                log.error("%s", e)
                config = {}
            for name, conn in config.items():
                server = self.servers.get(name)
                if server is not None and server.session is not None:
                    continue
                server = McpServer(name, conn, self.call_timeout)
                self.servers[name] = server
                try:
                    await server.start()
                except ServerUnavailable as e:
                    log.warning("MCP server %s left out: %s", name, e)
            if not config and not self.config_error:
                log.info("no MCP servers configured: the agent will run without tools")
            self._discovered = True

    async def list_tools(self) -> Sequence[ToolSpec]:
        await self._discover()
        return [t for s in self.servers.values() if s.session is not None for t in s.tools]

    async def call(self, name: str, args: Mapping[str, Any], idempotency_key: str) -> ToolOutcome:
        await self._discover()  # a resume can start at the tools step, before any listing
        server_name, _, tool = name.partition(SEP)
        server = self.servers.get(server_name)
        if server is None or not tool:
            return ToolOutcome(f"Error: tool {name!r} is not available", is_error=True)
        spec = server.spec(tool)
        repeatable = spec is not None and not spec.unsafe_to_repeat
        try:
            try:
                result = await server.call(tool, args, idempotency_key)
            except _BROKEN as first:
                if isinstance(first, McpError) and not _session_lost(first):
                    raise
                if not (repeatable or _never_sent(first)):
                    log.warning("MCP server %s: session broken during %s (%r); not sending it again",
                                server_name, name, first)
                    raise ToolOutcomeUnknown(
                        f"The server of tool {name} stopped during the call, so it may or may not have "
                        'taken effect: resume the conversation with decision "retry" or "skip"'
                    ) from first
                log.warning("MCP server %s: session broken (%r); restarting it", server_name, first)
                await server.restart()
                result = await server.call(tool, args, idempotency_key)
        except McpError as e:  # the server refused the call: data for the model
            return ToolOutcome(f"Error: {e.error.message}", is_error=True)
        return ToolOutcome(_text(result), is_error=bool(result.isError))

    async def status(self) -> Sequence[ToolServerStatus]:
        await self._discover()
        out = [
            ToolServerStatus(s.name, s.session is not None, len(s.tools), s.error, {"restarts": s.restarts, "target": s.target})
            for s in self.servers.values()
        ]
        if self.config_error:
            out.append(ToolServerStatus("mcp.json", False, 0, self.config_error))
        return out

    async def aclose(self) -> None:
        await asyncio.gather(*(s.stop() for s in self.servers.values()), return_exceptions=True)
        self.servers.clear()
        self._discovered = False
