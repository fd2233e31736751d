"""One configured MCP server, kept up by a supervisor task of its own.

The supervisor starts the server, holds its session open (anyio scopes must close in the
task that opened them), and starts it again when the session ends. A failed attempt is
retried after a back-off counted from the end of that attempt, doubling up to a ceiling,
so a server that hangs or prints garbage costs its own attempts and nothing else: callers
never wait on it, except a caller that asked for its tools while its very first attempt
is running (bounded by the toolbox), and a call whose session just broke (bounded by one
attempt).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from mcp import ClientSession, types

from adapters.mcp.stdio import open_session
from ports.tools import ToolSpec

log = logging.getLogger(__name__)

SEP = "__"
START_TIMEOUT = 30.0  # seconds one attempt (start, initialize, list tools) may take
BACKOFF_CEILING = 60.0


class ServerUnavailable(Exception):
    """Raised when an MCP server cannot be started or reached; the message is public."""


def public_reason(e: BaseException, timeout: float) -> str:
    """Our own words for why a server is down (the raw error goes to the log only)."""
    if isinstance(e, TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(e, FileNotFoundError):
        return "its command was not found"
    if isinstance(e, PermissionError):
        return "its command could not be run (permission denied)"
    if isinstance(e, (ConnectionError, OSError)):
        return "it could not be reached"
    return "it failed to start"


class McpServer:
    """A server's state as callers see it: `session` is set while it is up."""

    def __init__(
        self,
        name: str,
        connection: dict[str, Any],
        call_timeout: float,
        retry_after: float,
        reload: Callable[[], dict[str, Any] | None],
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        self.name = name
        self.connection = connection
        self.call_timeout = call_timeout
        self.retry_after = retry_after
        self.start_timeout = start_timeout
        self.reload = reload  # the server's entry re-read from mcp.json before a retry
        self.session: ClientSession | None = None
        self.tools: list[ToolSpec] = []
        self.approval: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())  # mcp.json's approve, autoApprove
        self.error: str | None = None
        self.restarts = 0
        self.attempting = False
        self.first_attempt_done = asyncio.Event()
        self._changed = asyncio.Condition()
        self._stop_session = asyncio.Event()
        self._supervisor: asyncio.Task[None] | None = None
        self._holder: asyncio.Task[None] | None = None

    def launch(self) -> None:
        if self._supervisor is None:
            self._supervisor = asyncio.create_task(self._supervise(), name=f"mcp-{self.name}")

    async def _supervise(self) -> None:
        failures = 0
        while True:
            self.attempting = True
            holder = await self._attempt()
            self.attempting = False
            self.first_attempt_done.set()
            await self._notify()
            if holder is None:
                failures += 1
                # counted from the end of the attempt, so a slow failure is not retried at once
                await asyncio.sleep(min(max(self.retry_after, 0.1) * 2 ** (failures - 1), BACKOFF_CEILING))
                self.connection = self.reload() or self.connection
                continue
            failures = 0
            await asyncio.wait({holder})  # not gather: cancelling the supervisor must not cancel it
            # no notification until the next attempt ends: waiters see "restarting", not "down"
            self.session = None
            self.restarts += 1
            log.warning("MCP server %s: session ended; starting it again", self.name)

    async def _attempt(self) -> asyncio.Task[None] | None:
        """Start the server and list its tools; the task holding the session, or None."""
        self._stop_session = asyncio.Event()
        ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        # a failure reported after the starter gave up (or was cancelled) is read here, so
        # it is never "a Future exception never retrieved"; the starter logs its own
        ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        holder = asyncio.create_task(self._hold(ready, self._stop_session), name=f"mcp-{self.name}-session")
        self._holder = holder
        try:
            async with asyncio.timeout(self.start_timeout):
                session = await asyncio.shield(ready)
                listed = await session.list_tools()
        except Exception as e:  # noqa: BLE001 - any failure leaves this server out, alone
            ready.cancel()  # the holder then has nobody to report to
            holder.cancel()  # the transport stops the process on its way out (up to ~4 s)
            # shielded: a second cancellation in the middle of that cleanup can leave the
            # transport's task group waiting forever (close() then waits for this one)
            await asyncio.shield(asyncio.gather(holder, return_exceptions=True))
            self.error = public_reason(e, self.start_timeout)
            log.warning("MCP server %s left out: %s (%s: %s)", self.name, self.error, type(e).__name__, e)
            return None
        self.tools = [self._spec(t) for t in listed.tools]
        self.session, self.error = session, None
        log.info("MCP server %s: %d tool(s)", self.name, len(self.tools))
        return holder

    async def _hold(self, ready: asyncio.Future[ClientSession], stop: asyncio.Event) -> None:
        try:
            async with open_session(self.name, self.connection) as session:
                await session.initialize()
                if ready.done():
                    return
                ready.set_result(session)
                await stop.wait()
        except Exception as e:  # noqa: BLE001 - reported to the waiting starter, or logged
            if not ready.done():
                ready.set_exception(e)
            elif not ready.cancelled():  # cancelled: the starter gave up and reports it
                log.warning("MCP server %s: session ended: %s: %s", self.name, type(e).__name__, e)

    def _spec(self, tool: types.Tool) -> ToolSpec:
        a = tool.annotations
        return ToolSpec(
            name=f"{self.name}{SEP}{tool.name}",
            description=tool.description or "",
            parameters=dict(tool.inputSchema or {"type": "object", "properties": {}}),
            read_only=bool(a and a.readOnlyHint),
            destructive=not (a and a.destructiveHint is False),
            idempotent=bool(a and a.idempotentHint),
            approve=self.approval[0],
            auto_approve=self.approval[1],
        )

    @property
    def target(self) -> str:
        """What is started or called: the command line (stdio) or the URL (HTTP)."""
        c = self.connection
        return str(c["url"]) if "url" in c else " ".join([str(c.get("command", "")), *map(str, c.get("args", []))])

    def spec(self, tool: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == f"{self.name}{SEP}{tool}"), None)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def restart(self, broken: ClientSession) -> None:
        """End the session `broken` (if still current); the supervisor starts a new one."""
        if self.session is broken:
            self._stop_session.set()

    async def session_other_than(self, broken: ClientSession | None, timeout: float) -> ClientSession:
        """A live session other than `broken`: the current one, or the one an attempt
        under way opens. ServerUnavailable when there is none within `timeout`."""

        def settled() -> bool:
            if self.session is not None:
                return self.session is not broken  # else: its supervisor has yet to see it end
            return not self.attempting

        try:
            async with asyncio.timeout(timeout), self._changed:
                await self._changed.wait_for(settled)
        except TimeoutError:
            pass
        if self.session is None or self.session is broken:
            raise ServerUnavailable(self.error or "it is not running")
        return self.session

    async def close(self) -> None:
        """Stop supervising, close the session (the transport stops the process: stdin
        closed, then SIGTERM, SIGKILL) and wait for it, at most 8 s before cancelling."""
        up = self.session is not None
        supervisor, self._supervisor = self._supervisor, None
        if supervisor is not None:
            supervisor.cancel()
            await asyncio.gather(supervisor, return_exceptions=True)
        holder, self._holder = self._holder, None
        self._stop_session.set()
        if holder is not None and not holder.done():
            if not up and not holder.cancelling():  # still starting: nothing to close gracefully
                holder.cancel()
            # the transport closes stdin, waits 2 s, then SIGTERM, 2 s, SIGKILL
            done, _ = await asyncio.wait({holder}, timeout=8.0)
            if not done:
                log.warning("MCP server %s: its session did not close in time", self.name)
                holder.cancel()
        self.session = None
        self.attempting = False
        self.first_attempt_done.set()
