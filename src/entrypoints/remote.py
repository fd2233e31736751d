"""The CLI as a client of a running server: POST /api/chat, then follow the SSE stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx


class RemoteError(Exception):
    """Raised when the server refuses the run or cannot be reached."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _events(response: httpx.Response) -> Iterator[tuple[str | None, str, Any]]:
    block: dict[str, str] = {}
    for line in response.iter_lines():
        if line:
            key, _, value = line.partition(": ")
            block[key] = value
            continue
        if block.get("event") and block["event"] != "ping":
            yield block.get("id") or None, block["event"], json.loads(block.get("data") or "null")  # ids are opaque
        block = {}


def _durable_answer(base: str, cid: str, headers: dict[str, str]) -> Iterator[tuple[str, Any]]:
    try:
        detail = httpx.get(f"{base}/api/conversations/{cid}", headers=headers, timeout=30).json()
    except (httpx.HTTPError, ValueError):
        return
    messages = detail.get("messages") or []
    if messages and messages[-1].get("role") == "assistant":
        yield "token", messages[-1].get("content", "")


def follow_run(server: str, body: dict[str, Any], token: str | None) -> tuple[dict[str, Any], Iterator[tuple[str, Any]]]:
    base = server.rstrip("/")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx.post(f"{base}/api/chat", json=body, headers=headers, timeout=30)
    except httpx.HTTPError as e:
        raise RemoteError("UNREACHABLE", f"cannot reach {base}: {e}") from e
    if response.status_code != 200:
        try:
            error = response.json()["error"]
        except (ValueError, KeyError, TypeError):
            error = {"code": f"HTTP_{response.status_code}", "message": response.text[:200]}
        raise RemoteError(error["code"], error["message"])
    started = response.json()

    def stream() -> Iterator[tuple[str, Any]]:
        last: str | None = None
        for _ in range(5):  # reconnect after a dropped connection, replaying after the last id
            try:
                with httpx.stream(
                    "GET", f"{base}/api/chat", params={"conversation": started["conversation"]},
                    headers={**headers, **({"Last-Event-ID": last} if last else {})}, timeout=httpx.Timeout(30, read=None),
                ) as r:
                    for event_id, event, data in _events(r):
                        if event_id is None and last is None and event in ("end", "chat-error"):
                            # the run ended before the stream opened: show its answer from
                            # the durable record
                            yield from _durable_answer(base, started["conversation"], headers)
                        last = event_id or last
                        yield event, data
                        if event in ("end", "chat-error"):
                            return
                return
            except httpx.TransportError:
                continue

    return started, stream()
