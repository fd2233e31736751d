"""ToolPort over MCP servers: one live session per server for the life of the process.

langchain-mcp-adapters' `get_tools()` opens a new session (a new process, for stdio) for
every tool call; here each server is kept up by a supervisor of its own (server.py) and
calls share its session. Discovery starts in the background on first use; callers use the
servers that are up and never wait on a server that is down or restarting, beyond the
first attempt (at most `first_wait` seconds from the start of discovery, so the first run
of a process sees servers that start normally). A broken session is restarted and the call
sent again only when that cannot run it twice: the request never left this process, or the
tool is read-only or idempotent. Otherwise the call ends with ToolOutcomeUnknown and the
user decides.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, types
from mcp.shared.exceptions import McpError
from mcp.types import CONNECTION_CLOSED

from adapters.mcp.config import McpConfig, McpConfigError, load_mcp_config
from adapters.mcp.server import SEP, START_TIMEOUT, McpServer, ServerUnavailable
from domain.errors import ToolOutcomeUnknown
from ports.tools import ToolOutcome, ToolPort, ToolServerStatus, ToolSpec

# the error code of mcp's own "no response within read_timeout_seconds" (httpx.codes.REQUEST_TIMEOUT)
REQUEST_TIMEOUT = 408

log = logging.getLogger(__name__)

IDEMPOTENCY_META = "sophos/idempotency_key"
RETRY_AFTER = 1.0  # seconds before a failed server is tried again; doubles up to a minute
FIRST_WAIT = 10.0  # seconds callers wait, from the start of discovery, for first attempts


class _OneLineParseErrors(logging.Filter):
    """The stdio transport logs a full traceback for every line a server prints that is
    not JSON-RPC; a server printing garbage would flood the log. One line, at most every
    10 s."""

    def __init__(self) -> None:
        super().__init__()
        self._last = -1e9

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.getMessage().startswith("Failed to parse JSONRPC message"):
            return True
        now = record.created
        if now - self._last < 10.0:
            return False
        self._last = now
        record.exc_info, record.exc_text, record.levelno, record.levelname = None, None, logging.WARNING, "WARNING"
        record.msg, record.args = "an MCP server printed a line that is not JSON-RPC (ignored; repeats muted 10 s)", ()
        return True


_PARSE_ERRORS = _OneLineParseErrors()


MAX_RESULT = 1024 * 1024  # characters of a tool result kept (stored, shown, offered to the model)


def _cut(text: str) -> str:
    if len(text) <= MAX_RESULT:
        return text
    return text[:MAX_RESULT] + f"\n[… cut: the tool returned {len(text):,} characters; the first {MAX_RESULT:,} are kept]"


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
    return _cut("\n".join(parts))


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
        self,
        config_dir: Path,
        memory_file: Path,
        call_timeout: float = 120.0,
        retry_after: float = RETRY_AFTER,
        first_wait: float = FIRST_WAIT,
        start_timeout: float = START_TIMEOUT,
        leave_out: frozenset[str] = frozenset(),
    ) -> None:
        self.config_dir = config_dir
        self.leave_out = leave_out  # servers of mcp.json served otherwise (MEMORY_BACKEND=store: "memory")
        self.memory_file = memory_file
        self.call_timeout = call_timeout
        self.retry_after = retry_after
        self.first_wait = first_wait
        self.start_timeout = start_timeout
        self.servers: dict[str, McpServer] = {}
        self.entry_errors: dict[str, str] = {}
        self.config_error: str | None = None
        self._deadline: float | None = None  # end of the first attempts' grace

    def _read_config(self) -> McpConfig:
        try:
            config = load_mcp_config(self.config_dir, self.memory_file)
        except McpConfigError as e:
            self.config_error = str(e)
            log.error("%s", e)
            return McpConfig({}, {})
        self.config_error = None
        if self.leave_out:
            config = replace(
                config,
                servers={k: v for k, v in config.servers.items() if k not in self.leave_out},
                errors={k: v for k, v in config.errors.items() if k not in self.leave_out},
            )
        for message in config.errors.values():
            log.error("%s: that server is left out", message)
        for name in config.disabled:
            log.info('MCP server %r is disabled in mcp.json ("disabled": true): not started', name)
        return config

    def _reload(self, name: str) -> dict[str, Any] | None:
        """A failed server's entry, re-read before it is tried again (mcp.json may have
        been fixed); None (keep the current one) when the file or the entry is unusable."""
        try:
            return load_mcp_config(self.config_dir, self.memory_file).servers.get(name)
        except McpConfigError:
            return None

    def _launch(self) -> None:
        """Start discovery in the background, once (never again once closed)."""
        if self._deadline is not None:
            return
        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + self.first_wait
        logging.getLogger("mcp.client.stdio").addFilter(_PARSE_ERRORS)
        config = self._read_config()
        self.entry_errors = config.errors
        for name, conn in config.servers.items():
            server = McpServer(
                name,
                conn,
                config.timeouts.get(name, self.call_timeout),
                self.retry_after,
                functools.partial(self._reload, name),
                self.start_timeout,
            )
            server.approval = config.approval.get(name, ((), ()))
            self.servers[name] = server
            server.launch()
        if not config.servers and not config.errors and not self.config_error:
            log.info("no MCP servers configured: the agent will run without tools")

    async def _first_attempts(self, servers: Sequence[McpServer]) -> None:
        """Wait for the first attempt of `servers`, until the grace ends at the latest."""
        self._launch()
        assert self._deadline is not None
        waiting = [asyncio.ensure_future(s.first_attempt_done.wait()) for s in servers if not s.first_attempt_done.is_set()]
        if not waiting:
            return
        remaining = self._deadline - asyncio.get_running_loop().time()
        if remaining > 0:
            await asyncio.wait(waiting, timeout=remaining)
        for w in waiting:
            w.cancel()

    async def warm_up(self) -> None:
        self._launch()

    async def list_tools(self) -> Sequence[ToolSpec]:
        self._launch()
        await self._first_attempts(list(self.servers.values()))
        return [t for s in self.servers.values() if s.session is not None for t in s.tools]

    async def call(self, name: str, args: Mapping[str, Any], idempotency_key: str) -> ToolOutcome:
        self._launch()  # a resume can start at the tools step, before any listing
        server_name, _, tool = name.partition(SEP)
        server = self.servers.get(server_name)
        if server is None or not tool:
            return ToolOutcome(f"Error: tool {name!r} is not available", is_error=True)
        await self._first_attempts([server])
        # a restart under way is waited for (this is its tool); a server never up is not
        wait = self.start_timeout if server.first_attempt_done.is_set() else 0.0
        try:
            session = await server.session_other_than(None, wait)
        except ServerUnavailable as e:
            return ToolOutcome(f"Error: the server of tool {name} is not running ({e}); try again later", is_error=True)
        spec = server.spec(tool)
        repeatable = spec is not None and not spec.unsafe_to_repeat
        try:
            try:
                result = await self._send(session, tool, args, idempotency_key, server.call_timeout)
            except _BROKEN as first:
                if isinstance(first, McpError) and not _session_lost(first):
                    raise
                if not (repeatable or _never_sent(first)):
                    log.warning("MCP server %s: session broken during %s (%r); not sending it again", server_name, name, first)
                    server.restart(session)
                    raise ToolOutcomeUnknown(
                        f"The server of tool {name} stopped during the call, so it may or may not have "
                        'taken effect: resume the conversation with decision "retry" or "skip"'
                    ) from first
                log.warning("MCP server %s: session broken (%r); restarting it", server_name, first)
                server.restart(session)
                try:
                    again = await server.session_other_than(session, self.start_timeout)
                except ServerUnavailable as e:
                    return ToolOutcome(f"Error: the server of tool {name} is not running ({e})", is_error=True)
                result = await self._send(again, tool, args, idempotency_key, server.call_timeout)
        except McpError as e:
            if e.error.code == REQUEST_TIMEOUT:  # raised by mcp itself: the server said nothing
                return self._timed_out(name, server, repeatable, e)
            return ToolOutcome(f"Error: {e.error.message}", is_error=True)  # the server refused the call
        return ToolOutcome(_text(result), is_error=bool(result.isError))

    def _timed_out(self, name: str, server: McpServer, repeatable: bool, e: McpError) -> ToolOutcome:
        """A call past its timeout: a failure the model may retry if the call is safe to
        repeat; else an unknown outcome, since it was sent and may be done (a model told
        "it failed" would usually do it again)."""
        if repeatable:
            return ToolOutcome(f"Error: tool {name} did not answer within {server.call_timeout:g} s", is_error=True)
        log.warning(
            "MCP server %s: %s did not answer within %g s; its outcome is unknown", server.name, name, server.call_timeout
        )
        raise ToolOutcomeUnknown(
            f"Tool {name} did not answer within {server.call_timeout:g} s, so it may or may not "
            'have taken effect: resume the conversation with decision "retry" or "skip"'
        ) from e

    async def _send(
        self, session: ClientSession, tool: str, args: Mapping[str, Any], key: str, timeout: float
    ) -> types.CallToolResult:
        return await session.call_tool(
            tool,
            dict(args),
            read_timeout_seconds=timedelta(seconds=timeout),
            meta={IDEMPOTENCY_META: key},
        )

    async def status(self) -> Sequence[ToolServerStatus]:
        """The servers as they are now: never waits for one to start."""
        self._launch()
        out = [
            ToolServerStatus(
                s.name,
                s.session is not None,
                len(s.tools),
                None if s.session is not None else _down(s),
                {"restarts": s.restarts, "target": s.target},
            )
            for s in self.servers.values()
        ]
        out += [ToolServerStatus(name, False, 0, "invalid entry in mcp.json (details in the log)") for name in self.entry_errors]
        if self.config_error:
            out.append(ToolServerStatus("mcp.json", False, 0, "mcp.json could not be read (details in the log)"))
        return out

    async def aclose(self) -> None:
        self._deadline = self._deadline or 0.0  # closed: nothing starts again
        await asyncio.gather(*(s.close() for s in self.servers.values()), return_exceptions=True)


def _down(server: McpServer) -> str:
    if server.attempting and not server.first_attempt_done.is_set():
        return "starting"
    if server.attempting:
        return f"restarting (last failure: {server.error})" if server.error else "restarting"
    return f"not running: {server.error or 'stopped'}"
