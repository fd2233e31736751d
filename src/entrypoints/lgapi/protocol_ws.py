"""The thread protocol's websocket (`/threads/{id}/stream/events`; entrypoints.lgapi.protocol):
each text message is a command, answered on the socket in the protocol's envelope, and
`subscription.subscribe` streams the thread's events of that subscription on it until
`subscription.unsubscribe` or the end of the socket. The guard has checked the handshake
(entrypoints.lgapi.guard); what a peer sends after is bounded: a message's size (uvicorn
closes the socket past MAX_WS_MESSAGE, 1009), its rate (past RATE messages a second over a
burst of BURST, the socket is closed, 1008) and its subscriptions (MAX_SUBSCRIPTIONS). The
socket ends with the server's drain (1001) or when its credentials no longer name anyone."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, Mapping
from typing import Any
from uuid import uuid4

from starlette.websockets import WebSocket, WebSocketDisconnect

from domain.errors import InvalidInput, SophosError
from domain.thread_protocol import Subscription
from entrypoints.http.principal import principal_of, recheck_of
from entrypoints.http.routes import MAX_BODY
from entrypoints.http.sse import RECHECK_SECONDS
from entrypoints.lgapi.protocol import command_parts, events_of, failure, handle, success
from entrypoints.lgapi.threads import services, thread_id
from services.handles import Batch
from services.thread_feed import thread_feed

log = logging.getLogger(__name__)

MAX_WS_MESSAGE = MAX_BODY
MAX_SUBSCRIPTIONS = 16
RATE = 20.0  # messages a second a peer may send, on average
BURST = 40.0


class _Bucket:
    """A token bucket: `take` is False once the peer sends faster than RATE past BURST."""

    def __init__(self) -> None:
        self.tokens = BURST
        self.at = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(BURST, self.tokens + (now - self.at) * RATE)
        self.at = now
        self.tokens -= 1
        return self.tokens >= 0


class _Socket:
    """One accepted socket: its subscriptions' tasks, and sends one at a time."""

    def __init__(self, ws: WebSocket, tid: str) -> None:
        self.ws = ws
        self.tid = tid
        self.lock = asyncio.Lock()
        self.subscriptions: dict[str, asyncio.Task[None]] = {}

    async def send(self, message: Mapping[str, Any]) -> None:
        async with self.lock:
            await self.ws.send_text(json.dumps(message, ensure_ascii=False))

    def feed(self, first: int | None) -> AsyncGenerator[Batch, None]:
        return thread_feed(services(self.ws).runs().kernel, self.tid, first)

    async def stream(self, subscription: Subscription) -> None:
        try:
            async for events in events_of(self.feed(subscription.first_run), subscription):
                for event in events:
                    await self.send(event)
        except (WebSocketDisconnect, RuntimeError):
            pass  # the socket closed under it
        except Exception:
            log.exception("thread %s: protocol subscription failed", self.tid)
            with contextlib.suppress(Exception):
                await self.ws.close(1011, "subscription failed")

    async def command(self, command_id: int, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        if method == "subscription.subscribe":
            if len(self.subscriptions) >= MAX_SUBSCRIPTIONS:
                raise InvalidInput(f"At most {MAX_SUBSCRIPTIONS} subscriptions on one socket")
            subscription = Subscription.parse(params)
            sid = str(uuid4())
            self.subscriptions[sid] = asyncio.create_task(self.stream(subscription))
            return success(command_id, {"subscription_id": sid})
        if method == "subscription.unsubscribe":
            task = self.subscriptions.pop(str(params.get("subscription_id")), None)
            if task is None:
                raise InvalidInput("No such subscription")
            task.cancel()
            return success(command_id, {})
        return await handle(self.ws, self.tid, command_id, method, params)

    async def close(self) -> None:
        for task in self.subscriptions.values():
            task.cancel()
        await asyncio.gather(*self.subscriptions.values(), return_exceptions=True)


async def _watch(sock: _Socket) -> None:
    """Close the socket with the server's drain, or once its credentials name no one."""
    closing: asyncio.Event = sock.ws.app.state.closing
    allowed = recheck_of(sock.ws)
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(closing.wait(), RECHECK_SECONDS)
        if closing.is_set():
            await sock.ws.close(1001, "server shutting down")
            return
        if allowed is not None and not await allowed():
            await sock.ws.close(1008, "credentials no longer valid")
            return


async def thread_socket(ws: WebSocket) -> None:
    """WebSocket /threads/{id}/stream/events."""
    tid = thread_id(ws)
    try:
        await services(ws).runs().visible(tid, principal_of(ws))
    except SophosError:
        await ws.close(1008, "Thread not found")
        return
    await ws.accept()
    sock, bucket = _Socket(ws, tid), _Bucket()
    watcher = asyncio.create_task(_watch(sock))
    try:
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            if not bucket.take():
                await ws.close(1008, "too many messages")
                return
            raw = message.get("text")
            if not isinstance(raw, str):
                await ws.close(1003, "commands are JSON text")
                return
            await sock.send(await _answer(sock, raw))
    except WebSocketDisconnect:
        pass
    finally:
        watcher.cancel()
        await sock.close()
        await asyncio.gather(watcher, return_exceptions=True)


async def _answer(sock: _Socket, raw: str) -> dict[str, Any]:
    """One message's answer: its result, or its refusal in the protocol's envelope (with the
    command's id when it has one)."""
    try:
        payload = json.loads(raw)
    except (ValueError, RecursionError):
        return failure(None, InvalidInput("Protocol commands must be valid JSON."))
    given = payload.get("id") if isinstance(payload, dict) else None
    command_id = given if isinstance(given, int) and not isinstance(given, bool) else None
    try:
        return await sock.command(*command_parts(payload))
    except SophosError as e:
        log.info("thread %s: protocol command refused: %s", sock.tid, e)
        return failure(command_id, e)
