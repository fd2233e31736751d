"""ToolPort over plain Python callables: the demo tools and tests' tools."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ports.tools import ToolOutcome, ToolPort, ToolServerStatus, ToolSpec

ToolFn = Callable[[Mapping[str, Any], str], Awaitable[str]]


class StaticToolbox(ToolPort):
    """Each tool is a spec plus `async fn(args, idempotency_key) -> text`. A raising
    function gives an error outcome, as a failing MCP tool does."""

    def __init__(self, tools: Sequence[tuple[ToolSpec, ToolFn]] = (), server: str = "static") -> None:
        self._tools = {spec.name: (spec, fn) for spec, fn in tools}
        self._server = server
        self.calls: list[tuple[str, dict[str, Any], str]] = []

    async def list_tools(self) -> Sequence[ToolSpec]:
        return [spec for spec, _ in self._tools.values()]

    async def call(self, name: str, args: Mapping[str, Any], idempotency_key: str) -> ToolOutcome:
        self.calls.append((name, dict(args), idempotency_key))
        entry = self._tools.get(name)
        if entry is None:
            return ToolOutcome(f"Error: tool {name!r} is not available", is_error=True)
        try:
            return ToolOutcome(await entry[1](args, idempotency_key))
        except Exception as e:
            return ToolOutcome(f"Error: {e}", is_error=True)

    async def status(self) -> Sequence[ToolServerStatus]:
        if not self._tools:
            return []
        return [ToolServerStatus(self._server, True, len(self._tools))]

    async def aclose(self) -> None:
        return None
