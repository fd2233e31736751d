"""Attachments over HTTP: POST /api/chat's files (JSON with base64, or multipart/form-data)
and GET of a file's bytes for the page's preview."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message

from domain.attachments import PDF_TYPE, TEXT_TYPES, AttachmentLimits, Upload, clean_name, parse_upload
from domain.errors import InvalidInput
from entrypoints.bundle import Services
from entrypoints.http.principal import principal_of

# a file served back can never run as a page, whatever it holds
FILE_CSP = "default-src 'none'; sandbox"


async def form_body(request: Request, limits: AttachmentLimits) -> tuple[dict[str, Any], tuple[Upload, ...]]:
    """A multipart/form-data chat request: its text fields as the JSON body's (`message`,
    `conversation`, `model`, `system`; the others as JSON text), its files as attachments."""
    try:
        # max_part_size bounds the text fields only: Starlette spools files to disk unbounded,
        # so the body itself is counted (413 past limits.form_bytes)
        form = await _bounded(request, limits.form_bytes).form(
            max_files=limits.max_files + 1, max_fields=32, max_part_size=256 * 1024
        )
    except HTTPException:
        raise
    except Exception as e:  # python-multipart's parse errors: a malformed body, never a 500
        raise InvalidInput(f"The multipart body cannot be read: {type(e).__name__}") from None
    try:
        body: dict[str, Any] = {}
        uploads: list[UploadFile] = []
        for key, value in form.multi_items():
            if isinstance(value, UploadFile):
                if key not in ("attachments", "file", "files"):
                    raise InvalidInput(f"Unknown file field: {key}")
                uploads.append(value)
            elif key in body:
                raise InvalidInput(f"Field {key} is given twice")
            else:
                body[key] = value
        limits.check_count(uploads)
        files = []
        for upload in uploads:
            name = clean_name(upload.filename or "")
            data = await upload.read(limits.max_bytes + 1)
            files.append(parse_upload(name, upload.content_type, data, limits))
    finally:
        await form.close()
    return body, tuple(files)


def _bounded(request: Request, limit: int) -> Request:
    """The request, its body refused (413) once more than `limit` bytes have arrived."""
    received = 0

    async def receive() -> Message:
        nonlocal received
        message = await request.receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise HTTPException(413, f"Request body is larger than {limit} bytes")
        return message

    return Request(request.scope, receive)


def _disposition(kind: str, name: str) -> str:
    ascii_name = "".join(ch if 32 <= ord(ch) < 127 and ch not in '"\\' else "_" for ch in name)
    return f"{kind}; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"


async def get_attachment(request: Request) -> Response:
    services: Services = request.app.state.services
    if services.files is None:
        raise HTTPException(404, "Attachments are not served here")
    cid = request.path_params["conversation_id"]
    await services.conversations().summary(cid, by=principal_of(request))  # another user's: the 404 of an unknown one
    found, stored = await services.files().read(cid, request.path_params["digest"])
    if stored.media_type in TEXT_TYPES or stored.media_type.startswith("text/"):
        media, kind = "text/plain; charset=utf-8", "inline"  # HTML, XML and the rest shown as text only
    elif stored.media_type == PDF_TYPE:
        media, kind = PDF_TYPE, "attachment"
    else:
        media, kind = stored.media_type, "inline"
    headers = {
        "Content-Disposition": _disposition(kind, found.name),
        "Content-Security-Policy": FILE_CSP,
        # never kept in the browser's cache: on a shared computer a file must not outlive the
        # log-out (the API's own responses are no-store for the same reason)
        "Cache-Control": "no-store",
    }
    return Response(stored.data, media_type=media, headers=headers)
