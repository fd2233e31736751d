"""A Sophos run's events as LangGraph's stream: `metadata` first, then per stream mode
`values` (the thread's messages after each step), `updates` (what each node added),
`messages` (`messages-tuple`: token chunks and tool results as [message, metadata]),
`custom` (Sophos's trace notes), and at the end `error` (a failed run) and `end` (after
the last run: a run stopped by a crash is followed by the run that resumed it).

Each Sophos event may become several LangGraph events; only the last of them carries an
id, the Sophos event's own (`<n>@<run tag>`), so a re-join with Last-Event-ID resumes
after the whole group and nothing is sent twice."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from starlette.responses import StreamingResponse

from domain.events import StreamEvent
from domain.model import CheckpointSummary, Message
from entrypoints.http.sse import RECHECK_SECONDS
from entrypoints.lgapi.shapes import ASSISTANT_ID, GRAPH_ID, hitl_interrupt, message_dict
from services.handles import Batch, RunStream, run_tag

MODES = frozenset({"values", "updates", "messages-tuple", "messages", "custom", "events", "debug", "tasks", "checkpoints"})
DEFAULT_MODES = ("values",)
HEADERS = {"Cache-Control": "no-cache, no-transform", "Connection": "keep-alive", "X-Accel-Buffering": "no"}

Out = tuple[str, Any]
# the thread's messages on its active branch, and its checkpoint log (oldest first)
ReadThread = Callable[[], Awaitable[tuple[Sequence[Message], Sequence[CheckpointSummary]]]]


class Encoded(str):
    """An event's data already encoded as JSON (a token's chunk: see Projector._token)."""


def sse(event: str, data: Any, event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    body = data if isinstance(data, Encoded) else json.dumps(data, ensure_ascii=False)
    return f"{head}event: {event}\ndata: {body}\n\n".encode()


def parse_modes(raw: object) -> tuple[str, ...] | None:
    """The stream modes asked for, or None when `raw` is not a mode or a list of modes."""
    if raw is None:
        return DEFAULT_MODES
    modes = [raw] if isinstance(raw, str) else raw
    if not isinstance(modes, list) or not modes or not all(isinstance(m, str) and m in MODES for m in modes):
        return None
    return tuple(dict.fromkeys(modes))


@dataclass
class Projector:
    """Turns one run's Sophos events into LangGraph events for `modes`; reads the thread
    (`read`) when a step ends, for `values` and `updates`."""

    modes: tuple[str, ...]
    thread_id: str
    run_id: str
    read: ReadThread
    base: int | None = None  # thread messages before the run's output (its input included)
    step: int = 0
    node: str = "agent"
    seen: int | None = None  # messages of the thread already sent as updates
    last_values: list[dict[str, Any]] | None = field(default=None)
    # a token's `messages` event is the same JSON but for its text: encoded once a step,
    # as the text before and after it (a turn streams a chunk per token)
    _chunk: tuple[tuple[str, int], str, str] | None = None

    def _meta(self, node: str) -> dict[str, Any]:
        return {
            "langgraph_node": node,
            "langgraph_step": self.step,
            "langgraph_triggers": [f"branch:to:{node}"],
            "langgraph_path": ["__pregel_pull", node],
            "thread_id": self.thread_id,
            "run_id": self.run_id,
            "graph_id": GRAPH_ID,
            "assistant_id": ASSISTANT_ID,
        }

    @property
    def wants_state(self) -> bool:
        return "values" in self.modes or "updates" in self.modes

    async def begin(self) -> list[Out]:
        out: list[Out] = [("metadata", {"run_id": self.run_id, "attempt": 1})]
        if self.wants_state:
            # the state the run started from, even when this stream begins after its end
            thread = (await self.read())[0]
            messages = [message_dict(m, i) for i, m in enumerate(thread[: self.base] if self.base else thread)]
            self.seen = len(messages)
            if "values" in self.modes:
                self.last_values = messages
                out.append(("values", {"messages": messages}))
        return out

    async def _step_ended(self, node: str, step: int | None) -> list[Out]:
        """The state after `step` (None: after the run): the thread's messages up to the
        count of the checkpoint this run wrote for that step, so a stream read late (a
        re-join, a slow client) still shows each step as it was."""
        if not self.wants_state:
            return []
        thread, log = await self.read()
        count = len(thread)
        if step is not None:
            counts = [c.message_count for c in log if c.run_id == self.run_id and c.step == step]
            count = min(counts[-1], count) if counts else count
        messages = [message_dict(m, i) for i, m in enumerate(thread[:count])]
        out: list[Out] = []
        if "updates" in self.modes:
            new = messages[self.seen :] if self.seen is not None and self.seen <= len(messages) else []
            if new:
                out.append(("updates", {node: {"messages": new}}))
        self.seen = len(messages)
        if "values" in self.modes and messages != self.last_values:
            self.last_values = messages
            out.append(("values", {"messages": messages}))
        return out

    def _token(self, text: str) -> Encoded:
        """`[AIMessageChunk, metadata]` of one token, as JSON."""
        key = (self.run_id, self.step)
        if self._chunk is None or self._chunk[0] != key:
            mark = "\x00"
            chunk: dict[str, Any] = {
                "type": "AIMessageChunk",
                "content": mark,
                "id": f"run-{self.run_id}-{self.step}",
                "tool_calls": [],
                "tool_call_chunks": [],
                "invalid_tool_calls": [],
                "additional_kwargs": {},
                "response_metadata": {},
                "name": None,
                "example": False,
                "usage_metadata": None,
            }
            before, _, after = json.dumps([chunk, self._meta("agent")], ensure_ascii=False).partition(json.dumps(mark))
            self._chunk = (key, before, after)
        return Encoded(f"{self._chunk[1]}{json.dumps(text, ensure_ascii=False)}{self._chunk[2]}")

    async def encode(self, batch: Batch, tag: str) -> bytes:
        """A batch of the run's events as SSE: the id of each (`<n>@<tag>`) on the last
        LangGraph event it becomes."""
        chunks: list[bytes] = []
        for event_id, event in batch:
            outs = await self.feed(event)
            for i, (name, data) in enumerate(outs):
                chunks.append(sse(name, data, f"{event_id}@{tag}" if i == len(outs) - 1 else None))
        return b"".join(chunks)

    async def feed(self, event: StreamEvent) -> list[Out]:
        kind, data = event.event, event.data
        out: list[Out] = []
        if kind == "token":
            if "messages-tuple" in self.modes:
                out.append(("messages", self._token(str(data))))
        elif kind == "trace":
            if "custom" in self.modes:
                out.append(("custom", data))
            note = data.get("event") if isinstance(data, dict) else None
            if note == "enter":
                self.step, self.node = int(data.get("step", self.step)), str(data.get("node", self.node))
            elif note == "leave":
                out += await self._step_ended(str(data.get("node", self.node)), int(data.get("step", self.step)))
            elif note == "result" and "messages-tuple" in self.modes:
                r = data.get("data") or {}
                message = {
                    "type": "tool",
                    "content": r.get("result", ""),
                    "tool_call_id": r.get("tool_call_id"),
                    "name": r.get("name"),
                    "id": f"run-{self.run_id}-tool-{r.get('tool_call_id')}",
                    "status": "success",
                    "additional_kwargs": {},
                    "response_metadata": {},
                    "artifact": None,
                }
                out.append(("messages", [message, self._meta("tools")]))
        elif kind == "approval":
            calls = data.get("calls", []) if isinstance(data, dict) else []
            if calls:
                interrupt = hitl_interrupt(calls)
                if "updates" in self.modes:
                    out.append(("updates", {"__interrupt__": [interrupt]}))
                if "values" in self.modes:
                    out.append(("values", {"messages": self.last_values or [], "__interrupt__": [interrupt]}))
        elif kind == "end":
            out += await self._step_ended(self.node, None)
            if isinstance(data, dict) and data.get("status") == "failed" and data.get("error"):
                err = data["error"]
                out.append(("error", {"error": err.get("code", "AGENT_FAILURE"), "message": err.get("message", "")}))
        elif kind == "chat-error":
            payload = data if isinstance(data, dict) else {}
            out.append(("error", {"error": payload.get("code", "UNKNOWN_ERROR"), "message": payload.get("message", "")}))
        return out


class Projecting(Protocol):
    """What turns a run's events into SSE: Projector (Sophos's agent), or a hosted graph's
    (entrypoints.lgapi.hosted.ChunkProjector)."""

    run_id: str

    async def begin(self) -> list[Out]: ...

    async def encode(self, batch: Batch, tag: str) -> bytes: ...


def stream_response(
    projector: Projecting,
    source: AsyncIterator[RunStream],
    ping_seconds: float,
    closing: asyncio.Event,
    headers: dict[str, str],
    begin: bool = True,
    allowed: Callable[[], Awaitable[bool]] | None = None,
    recheck_seconds: float = RECHECK_SECONDS,
) -> StreamingResponse:
    """The SSE response for the runs `source` yields, one after the other (a run and the
    run that resumed it after a crash), with `: heartbeat` comments while nothing comes.
    `allowed` is asked every `recheck_seconds` whether the request's credentials still name
    someone, as on the main API: a revoked token or a disabled user ends the stream."""

    async def body() -> AsyncIterator[bytes]:
        if begin:
            yield b"".join(sse(e, d) for e, d in await projector.begin())
        closed = asyncio.ensure_future(closing.wait())
        clock = asyncio.get_running_loop().time
        next_check = clock() + recheck_seconds if allowed is not None else float("inf")
        try:
            async for events in source:
                projector.run_id = events.run_id
                tag = run_tag(events.run_id)
                pending: asyncio.Future[Any] | None = None
                next_ping = clock() + ping_seconds
                try:
                    while True:
                        if pending is None:
                            pending = asyncio.ensure_future(anext(events))
                        if allowed is not None and clock() >= next_check:
                            if not await allowed():
                                return
                            next_check = clock() + recheck_seconds
                        timeout = max(0.0, min(next_ping, next_check) - clock())
                        done, _ = await asyncio.wait({pending, closed}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                        if pending in done:
                            try:
                                batch = pending.result()
                            except StopAsyncIteration:
                                break
                            pending = None
                            if out := await projector.encode(batch, tag):
                                yield out
                            next_ping = clock() + ping_seconds
                        elif closed in done:
                            return
                        elif clock() >= next_ping:
                            yield b": heartbeat\n\n"
                            next_ping = clock() + ping_seconds
                finally:
                    await _close(pending, events)
            yield sse("end", None)  # after the last run: one that resumed a crashed one comes first
        finally:
            closed.cancel()

    return StreamingResponse(body(), media_type="text/event-stream", headers={**HEADERS, **headers})


async def _close(pending: asyncio.Future[Any] | None, events: RunStream) -> None:
    """A run's stream given up or read to its end: the read in flight too."""
    if pending is not None:
        pending.cancel()
        await asyncio.gather(pending, return_exceptions=True)
    await events.aclose()
