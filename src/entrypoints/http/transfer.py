"""Routes that move whole conversations (extensions of the seed contract, see
docs/contract-extensions.md): a conversation's JSON export, every conversation as a zip,
and an import."""

from __future__ import annotations

import asyncio
from urllib.parse import quote

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from domain.model import Conversation
from domain.transfer import LIMITS, file_name
from entrypoints import user_transfer
from entrypoints.bundle import Services
from entrypoints.dto import summary_dto
from entrypoints.http.principal import principal_of
from entrypoints.transfer_files import document_bytes, json_name

UPLOAD_TIME = 10  # an import's body may take this many times REQUEST_TIMEOUT to arrive: it can be large


def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def _attachment(name: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{name}"'}


def export_headers(conversation: Conversation, extension: str) -> dict[str, str]:
    """A Markdown or JSONL export's Content-Disposition: the contract's `filename`
    (`<id>.md`, `<id>.checkpoints.jsonl`) as it is, for the clients that read it, and
    `filename*` from the title and date, as `sophos export -o` names the file, which
    browsers take over `filename` (RFC 6266 4.3): the page saves `hello-2026-12-05.md`."""
    name = file_name(conversation.title, conversation.created_at, extension)
    return {
        "Content-Disposition": f"attachment; filename=\"{conversation.id}.{extension}\"; filename*=UTF-8''{quote(name, safe='')}"
    }


async def export_json(request: Request, conversation_id: str) -> Response:
    conv, copy = await _services(request).transfer().export(conversation_id, by=principal_of(request))
    return Response(document_bytes(conv, copy), media_type="application/json", headers=_attachment(json_name(copy)))


async def export_all(request: Request) -> Response:
    name, body = await user_transfer.export_all(_services(request), principal_of(request))
    return Response(body, media_type="application/zip", headers=_attachment(name))


async def _upload(request: Request) -> bytes:
    size = 0
    chunks: list[bytes] = []
    timeout = request.app.state.request_timeout * UPLOAD_TIME
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > LIMITS.bytes:
                    raise HTTPException(413, f"An import is at most {LIMITS.bytes // (1024 * 1024)} MB")
                chunks.append(chunk)
    except TimeoutError:
        raise HTTPException(408, f"The file did not arrive within {timeout:g} s") from None
    except ClientDisconnect:
        raise HTTPException(400, "The client disconnected before sending the file") from None
    return b"".join(chunks)


async def import_conversations(request: Request) -> Response:
    """The body is the file: a Sophos export (one conversation, or the zip of all) or
    ChatGPT's conversations.json. 201 with the new conversations' summaries."""
    data = await _upload(request)
    imported, users = await user_transfer.import_upload(_services(request), data, principal_of(request))
    body: dict[str, object] = {"conversations": [summary_dto(c) for c in imported]}
    if users:  # a sophos-user.json: the user's store items and collections
        body["items"] = sum(len(u.items) for u in users)
        body["collections"] = sum(len(u.collections) for u in users)
    return JSONResponse(body, status_code=201)
