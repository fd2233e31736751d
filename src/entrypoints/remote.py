"""The CLI as a client of a running server: POST /api/chat, then follow the SSE stream;
cancel, rename and delete."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
from httpx_sse import EventSource


class RemoteError(Exception):
    """Raised when the server refuses the run or cannot be reached."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _events(response: httpx.Response) -> Iterator[tuple[str | None, str, Any]]:
    """(id, event, data) of each named event but pings; the id only on the event that carried
    one. An answer that is not an event stream (an error's JSON) has no events."""
    if "text/event-stream" not in response.headers.get("content-type", ""):
        return
    previous = ""
    for sse in EventSource(response).iter_sse():
        # in the SSE grammar an event inherits the last id; the server numbers every event it
        # wants replayed and never repeats an id, so an unchanged id is one the event lacked
        own, previous = (sse.id if sse.id != previous else None), sse.id
        if sse.event not in ("message", "ping"):  # "message": a block with no event name
            yield own or None, sse.event, json.loads(sse.data or "null")  # ids are opaque


def _durable_answer(base: str, cid: str, headers: dict[str, str], event: str, data: Any) -> Iterator[tuple[str, Any]]:
    """The run ended before the stream opened: its answer and outcome from the durable record
    (a failure as the `chat-error` the live stream would have sent)."""
    try:
        detail = httpx.get(f"{base}/api/conversations/{quote(cid, safe='')}", headers=headers, timeout=30).json()
    except (httpx.HTTPError, ValueError):
        detail = {}
    messages = detail.get("messages") or []
    if messages and messages[-1].get("role") == "assistant":
        yield "token", messages[-1].get("content", "")
    error = (detail.get("conversation") or {}).get("error")
    if event == "end" and data.get("status") == "waiting" and detail.get("pendingApprovals"):
        yield "approval", {"conversation": cid, "calls": detail["pendingApprovals"]}
    if event == "end" and data.get("status") == "failed" and isinstance(error, dict):
        yield "chat-error", {**error, "conversation": cid}
    else:
        yield event, data


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _request(method: str, server: str, path: str, token: str | None, body: Any = None) -> httpx.Response:
    """One API call; a refusal becomes a RemoteError with the server's code and message."""
    base = server.rstrip("/")
    try:
        response = httpx.request(method, f"{base}{path}", json=body, headers=_headers(token), timeout=30)
    except httpx.HTTPError as e:
        raise RemoteError("UNREACHABLE", f"cannot reach {base}: {e}") from e
    if not response.is_success:
        try:
            error = response.json()["error"]
        except (ValueError, KeyError, TypeError):
            error = {"code": f"HTTP_{response.status_code}", "message": response.text[:200]}
        raise RemoteError(error["code"], error["message"])
    return response


def cancel(server: str, conversation: str, token: str | None) -> dict[str, Any]:
    """Stop the conversation's run: `{conversation, run, status}`."""
    result: dict[str, Any] = _request("POST", server, "/api/chat/cancel", token, {"conversation": conversation}).json()
    return result


def rename(server: str, conversation: str, title: str, token: str | None) -> dict[str, Any]:
    """The renamed conversation's summary."""
    result: dict[str, Any] = _request("PATCH", server, f"/api/conversations/{quote(conversation, safe='')}", token, {"title": title}).json()
    return result


def delete(server: str, conversation: str, token: str | None) -> None:
    _request("DELETE", server, f"/api/conversations/{quote(conversation, safe='')}", token)


def conversation(server: str, conversation_id: str, token: str | None) -> dict[str, Any]:
    """The conversation's detail, as GET /api/conversations/ID gives it."""
    result: dict[str, Any] = _request("GET", server, f"/api/conversations/{quote(conversation_id, safe='')}", token).json()
    return result


def allow_rules(server: str, token: str | None) -> list[dict[str, Any]]:
    """The tools always allowed: `[{tool, since}]`."""
    rules: list[dict[str, Any]] = _request("GET", server, "/api/approvals/always", token).json()["alwaysAllowed"]
    return rules


def revoke_rule(server: str, tool: str, token: str | None) -> None:
    _request("DELETE", server, f"/api/approvals/always/{quote(tool, safe='')}", token)


def follow_run(server: str, body: dict[str, Any], token: str | None) -> tuple[dict[str, Any], Iterator[tuple[str, Any]]]:
    base = server.rstrip("/")
    headers = _headers(token)
    started: dict[str, Any] = _request("POST", server, "/api/chat", token, body).json()

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
                            yield from _durable_answer(base, started["conversation"], headers, event, data)
                            return
                        last = event_id or last
                        yield event, data
                        if event in ("end", "chat-error"):
                            return
                return
            except httpx.TransportError:
                continue

    return started, stream()
