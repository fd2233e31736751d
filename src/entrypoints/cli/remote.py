"""The client of a running server (`--server URL`): its HTTP API, runs followed over SSE."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
from httpx_sse import SSEError, aconnect_sse

from entrypoints.cli.client import Json, RemoteError, SophosClient, Stopper

if TYPE_CHECKING:
    from domain.lifecycle import StopReason
    from entrypoints.cli.output import Printer

TIMEOUT = 30  # seconds for a request; a followed stream may be silent for as long as a run takes
RECONNECTS = 5  # a dropped stream is reopened after its last event id this many times


def _path(conversation: str) -> str:
    return f"/api/conversations/{quote(conversation, safe='')}"


class HttpClient(SophosClient):
    in_process = False

    def __init__(self, server: str, token: str | None, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.base = server.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.AsyncClient(base_url=self.base, headers=headers, timeout=TIMEOUT, transport=transport)

    async def _request(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> httpx.Response:
        """One API call; a refusal becomes a RemoteError with the server's code and message."""
        try:
            response = await self._http.request(method, path, json=body, params=params)
        except httpx.HTTPError as e:
            raise RemoteError("UNREACHABLE", f"cannot reach {self.base}: {e}") from e
        if not response.is_success:
            raise _refusal(response)
        return response

    async def _json(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        return (await self._request(method, path, body, params)).json()

    async def conversations(self, limit: int | None) -> list[Json]:
        body = await self._json("GET", "/api/conversations", params={"limit": limit} if limit else None)
        items: list[Json] = body["conversations"]
        return items

    async def find(self, id_prefix: str) -> list[Json]:
        items: list[Json] = (await self._json("GET", "/api/conversations", params={"idPrefix": id_prefix}))["conversations"]
        return items

    async def conversation(self, conversation: str) -> Json:
        detail: Json = await self._json("GET", _path(conversation))
        return detail

    async def rename(self, conversation: str, title: str) -> Json:
        summary: Json = (await self._json("PATCH", _path(conversation), {"title": title}))["conversation"]
        return summary

    async def delete(self, conversation: str) -> None:
        await self._request("DELETE", _path(conversation))

    async def configure(self, conversation: str, settings: Json) -> Json:
        summary: Json = (await self._json("PATCH", _path(conversation), settings))["conversation"]
        return summary

    async def models(self) -> Json:
        listed: Json = await self._json("GET", "/api/models")
        return listed

    async def switch_branch(self, conversation: str, number: int) -> Json:
        detail: Json = await self._json("PATCH", _path(conversation), {"activeBranch": number})
        return detail

    async def export(self, conversation: str, fmt: str) -> str:
        return (await self._request("GET", f"{_path(conversation)}/export", params={"format": fmt})).text

    async def export_file(self, conversation: str | None) -> tuple[str, bytes]:
        if conversation is None:
            response = await self._request("GET", "/api/export")
        else:
            response = await self._request("GET", f"{_path(conversation)}/export", params={"format": "json"})
        return _file_name(response, "sophos-export.zip" if conversation is None else f"{conversation}.json"), response.content

    async def import_file(self, data: bytes) -> list[Json]:
        try:
            response = await self._http.post(
                "/api/import",
                content=data,
                headers={"Content-Type": "application/octet-stream"},
                timeout=httpx.Timeout(TIMEOUT, write=None, read=None),
            )
        except httpx.HTTPError as e:
            raise RemoteError("UNREACHABLE", f"cannot reach {self.base}: {e}") from e
        if not response.is_success:
            raise _refusal(response)
        items: list[Json] = response.json()["conversations"]
        return items

    async def search(self, query: str, limit: int) -> Json:
        page: Json = await self._json("GET", "/api/search", params={"q": query, "limit": limit})
        return page

    async def cancel(self, conversation: str) -> Json:
        result: Json = await self._json("POST", "/api/chat/cancel", {"conversation": conversation})
        return result

    async def allow_rules(self) -> list[Json]:
        rules: list[Json] = (await self._json("GET", "/api/approvals/always"))["alwaysAllowed"]
        return rules

    async def revoke_rule(self, tool: str) -> None:
        await self._request("DELETE", f"/api/approvals/always/{quote(tool, safe='')}")

    async def schedules(self) -> list[Json]:
        found: list[Json] = (await self._json("GET", "/api/schedules"))["schedules"]
        return found

    async def add_schedule(self, body: Json) -> Json:
        made: Json = (await self._json("POST", "/api/schedules", body))["schedule"]
        return made

    async def edit_schedule(self, schedule_id: str, body: Json) -> Json:
        edited: Json = (await self._json("PATCH", f"/api/schedules/{quote(schedule_id, safe='')}", body))["schedule"]
        return edited

    async def delete_schedule(self, schedule_id: str) -> None:
        await self._request("DELETE", f"/api/schedules/{quote(schedule_id, safe='')}")

    async def usage(self, first: str | None, last: str | None, everyone: bool) -> list[Json]:
        params = {k: v for k, v in (("from", first), ("to", last), ("all", "true" if everyone else None)) if v}
        rows: list[Json] = (await self._json("GET", "/api/usage", params=params))["rows"]
        return rows

    async def audit(self, since: str | None, limit: int) -> list[Json]:
        params: dict[str, Any] = {"limit": limit, **({"since": since} if since else {})}
        entries: list[Json] = (await self._json("GET", "/api/audit", params=params))["entries"]
        return entries

    async def memories(self) -> list[Json]:
        found: list[Json] = (await self._json("GET", "/api/memory"))["memories"]
        return found

    async def collections(self) -> list[Json]:
        found: list[Json] = (await self._json("GET", "/api/knowledge"))["collections"]
        return found

    async def knowledge_files(self, name: str) -> list[Json]:
        found: list[Json] = (await self._json("GET", f"/api/knowledge/{quote(name, safe='')}/files"))["files"]
        return found

    async def add_knowledge(self, name: str, files: list[tuple[str, bytes]]) -> list[Json]:
        parts = [("files", (n.rsplit("/", 1)[-1], data, "application/octet-stream")) for n, data in files]
        try:
            response = await self._http.post(f"/api/knowledge/{quote(name, safe='')}/files", files=parts)
        except httpx.HTTPError as e:
            raise RemoteError("UNREACHABLE", f"cannot reach {self.base}: {e}") from e
        if not response.is_success:
            raise _refusal(response)
        added: list[Json] = response.json()["files"]
        return added

    async def remove_knowledge(self, name: str, file: str | None) -> None:
        path = f"/api/knowledge/{quote(name, safe='')}"
        await self._request("DELETE", path if file is None else f"{path}/files/{quote(file, safe='')}")

    async def forget_memory(self, memory: str) -> None:
        await self._request("DELETE", f"/api/memory/{quote(memory, safe='')}")

    async def run(self, body: Json, printer: Printer, stopper: Stopper) -> tuple[str, str]:
        """POST the run, then follow its stream. Stopping it (Ctrl-C, a closed stdout) stops
        following and cancels it on the server."""
        printer.start()
        try:
            started = await self._json("POST", "/api/chat", body)
        except RemoteError:
            printer.spinner.close()
            raise
        if "queued" in started:  # the server answers it when the active run completes
            printer.spinner.close()
            printer.event("queued", started["queued"])
            return started["conversation"], ""
        cid, run_id = started["conversation"], started["run"]
        printer.conversation = cid

        async def follow() -> bool:
            async for event, data in self._events(cid):
                printer.event(event, data)
                if printer.pipe_closed:
                    return True
            return False

        task = asyncio.ensure_future(follow())

        def stop(reason: StopReason) -> None:
            task.cancel()  # whatever the reason: a server's run is stopped by cancelling it

        stopper.attach(stop)
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            stopper.detach()
            printer.spinner.close()
        if task.cancelled() or task.result():
            await self._stop(cid, printer)
        return cid, run_id

    async def _stop(self, cid: str, printer: Printer) -> None:
        import click

        try:
            status = str((await self.cancel(cid)).get("status", "cancelled"))
            # 202 `running`: the owner stops it at its next step; the person did stop it
            printer.status = "cancelling" if status == "running" else status
        except RemoteError as e:
            if e.code != "NO_ACTIVE_RUN":  # it finished meanwhile: nothing to stop
                click.echo(f"error: could not cancel the run on {self.base}: {e.code}: {e.message}", err=True)

    async def _events(self, cid: str) -> AsyncIterator[tuple[str, Any]]:
        """The run's events until its last, then those of the queued runs that follow it
        (`follow=queue`: the server ends the stream when no run follows), reconnecting
        after a dropped connection with the last event id (the server replays what
        followed it)."""
        last: str | None = None
        for _ in range(RECONNECTS):
            headers = {"Last-Event-ID": last} if last else {}
            try:
                params = {"conversation": cid, "follow": "queue"}
                async with aconnect_sse(
                    self._http, "GET", "/api/chat", params=params, headers=headers, timeout=httpx.Timeout(TIMEOUT, read=None)
                ) as source:
                    if not source.response.is_success:
                        await source.response.aread()
                        raise _refusal(source.response)
                    async for sse in source.aiter_sse():
                        if sse.event == "ping":
                            continue
                        data = json.loads(sse.data or "null")
                        if not sse.id and last is None and sse.event in ("end", "chat-error"):
                            async for durable in self._durable_answer(cid, sse.event, data):
                                yield durable
                            return
                        last = sse.id or last
                        yield sse.event, data
                return
            except SSEError as e:
                raise RemoteError("BAD_RESPONSE", f"{self.base} did not answer with an event stream: {e}") from e
            except httpx.TransportError:
                continue

    async def _durable_answer(self, cid: str, event: str, data: Any) -> AsyncIterator[tuple[str, Any]]:
        """The run ended before the stream opened: its answer and outcome from the durable
        record (a failure as the `chat-error` the live stream would have sent)."""
        try:
            detail = await self.conversation(cid)
        except (RemoteError, ValueError):
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

    async def aclose(self) -> None:
        await self._http.aclose()


def _file_name(response: httpx.Response, fallback: str) -> str:
    """The name the server gave the attachment, without any directory in it."""
    match = re.search(r'filename="([^"/\\]+)"', response.headers.get("content-disposition", ""))
    return match.group(1) if match else fallback


def _refusal(response: httpx.Response) -> RemoteError:
    try:
        error = response.json()["error"]
        return RemoteError(error["code"], error["message"])
    except (ValueError, KeyError, TypeError):
        return RemoteError(f"HTTP_{response.status_code}", response.text[:200])
