"""Server-sent events: the contract's wire format, replay after Last-Event-ID, id-less pings."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.responses import StreamingResponse

from domain.events import StreamEvent
from services.handles import TERMINAL_EVENTS, Batch, RunStream, run_tag

RECHECK_SECONDS = 1.0  # how often a stream asks whether its credentials still name someone
HEADERS = {
    "Cache-Control": "no-cache, no-transform",
    "Connection": "keep-alive",
    "X-Accel-Buffering": "no",
}


def format_event(event: str, data: Any, event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


_LAST_EVENT_ID = re.compile(r"([0-9]{1,15})(?:@([0-9a-f]{8}))?")


def last_event_id(header: str | None) -> tuple[int, str | None]:
    """The Last-Event-ID header: `<n>@<run tag>` (the ids this server sends) or the
    contract's bare number, as (n, tag or None); missing or invalid means (0, None)."""
    m = _LAST_EVENT_ID.fullmatch((header or "").strip())
    if m is None:
        return 0, None
    return int(m[1]), m[2]


def single(event: StreamEvent) -> StreamingResponse:
    """A stream of one event without an id (the durable and invalid-id answers)."""

    async def body() -> AsyncIterator[bytes]:
        yield format_event(event.event, event.data)

    return StreamingResponse(body(), media_type="text/event-stream", headers=HEADERS)


def follow(
    events: RunStream,
    ping_seconds: float,
    closing: asyncio.Event,
    headers: dict[str, str] | None = None,
    allowed: Callable[[], Awaitable[bool]] | None = None,
    recheck_seconds: float = RECHECK_SECONDS,
) -> StreamingResponse:
    """Stream a run's events up to its last one, the events that were ready together in one
    write; a `ping` every `ping_seconds` meanwhile. Ends early, with no error, when `closing`
    is set. Event ids are `<n>@<run tag>`: the contract's per-run number, and the run it
    belongs to, so a reconnect after another run started (EventSource resends the last id it
    saw) cannot skip the new run's events. `allowed` is asked every `recheck_seconds`
    whether the request's credentials still name someone: a log-out, a revoked token or a
    disabled user ends the stream within that time."""

    async def body() -> AsyncIterator[bytes]:
        closed: asyncio.Future[Any] = asyncio.ensure_future(closing.wait())
        pending: asyncio.Future[Batch] | None = None
        clock = asyncio.get_running_loop().time
        next_ping = clock() + ping_seconds
        next_check = clock() + recheck_seconds if allowed is not None else float("inf")
        try:
            while True:
                if pending is None:
                    pending = asyncio.ensure_future(anext(events))
                timeout = max(0.0, min(next_ping, next_check) - clock())
                done, _ = await asyncio.wait({pending, closed}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                if pending in done:
                    try:
                        batch = pending.result()
                    except StopAsyncIteration:
                        return
                    pending = None
                    tag = run_tag(events.run_id)
                    yield b"".join(format_event(event.event, event.data, f"{event_id}@{tag}") for event_id, event in batch)
                    next_ping = clock() + ping_seconds
                    if batch[-1][1].event in TERMINAL_EVENTS and not events.chained:
                        return
                elif closed in done:
                    return
                else:
                    if allowed is not None and clock() >= next_check:
                        if not await allowed():
                            return
                        next_check = clock() + recheck_seconds
                    if clock() >= next_ping:
                        yield format_event("ping", "")
                        next_ping = clock() + ping_seconds
        finally:
            closed.cancel()
            if pending is not None:
                pending.cancel()
                await asyncio.gather(pending, return_exceptions=True)
            await events.aclose()

    return StreamingResponse(body(), media_type="text/event-stream", headers={**HEADERS, **(headers or {})})
