"""ToolPort: the tools offered to the model (MCP servers, a static toolbox)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from domain.tools import ToolSpec

__all__ = ["ToolOutcome", "ToolPort", "ToolServerStatus", "ToolSpec"]


@dataclass(frozen=True)
class ToolOutcome:
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class ToolServerStatus:
    name: str
    ok: bool
    tools: int = 0
    error: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


class ToolPort(Protocol):
    """Lists and calls tools. Discovery is lazy and shared; a server that cannot start is
    left out (its status says why) rather than failing the caller, and is tried again in
    the background. No caller waits on a server that is down or restarting, beyond a
    bounded wait for the first attempt of discovery."""

    async def warm_up(self) -> None:
        """Begin discovery in the background (a server process calls it at start-up) and
        return at once. Nothing to do for a toolbox without servers."""
        return None

    @abstractmethod
    async def list_tools(self) -> Sequence[ToolSpec]:
        """Every tool currently offered (by the servers that are up), in a stable order."""

    @abstractmethod
    async def call(self, name: str, args: Mapping[str, Any], idempotency_key: str) -> ToolOutcome:
        """Run one tool call. A tool's own failure (unknown tool, bad arguments, an error
        result) is an outcome with is_error=True, never an exception. `idempotency_key`
        is the same every time the same call is run again (crash, resume). A call cut short
        whose outcome is unknown is sent again only if that cannot run it twice; otherwise
        ToolOutcomeUnknown is raised."""

    @abstractmethod
    async def status(self) -> Sequence[ToolServerStatus]:
        """One entry per configured server (and per unusable entry of the configuration),
        as things are now: never waits for a server to start. `error` is a public message
        of our own; raw errors go to the log."""

    @abstractmethod
    async def aclose(self) -> None:
        """Close every session and stop every server process. Idempotent."""
