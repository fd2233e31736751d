"""Knowledge collections over HTTP (issue 45 item 3): `/api/knowledge` lists and creates the
caller's collections, `/api/knowledge/{name}` deletes one, `/api/knowledge/{name}/files`
lists its files and takes new ones (multipart/form-data, each file under `files`: a file of
the same name is replaced and re-indexed), `/api/knowledge/{name}/files/{file}` deletes one,
and `.../passage?lines=12-30` reads back the passage a citation names. Each is the caller's
own: another user's collection answers as an unknown one (404). Declared in ROUTES."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from domain.errors import InvalidInput, NotSupported
from domain.knowledge import NAME_MAX, Collection, KnowledgeFile
from domain.model import iso
from entrypoints.http import files
from entrypoints.http.openapi import Answer, ApiRoute, Param, Schema
from entrypoints.http.principal import principal_of
from entrypoints.http.routes import read_json
from services.knowledge import Added, KnowledgeService

FILES_PER_REQUEST = 32


def _service(request: Request) -> KnowledgeService:
    knowledge = request.app.state.services.knowledge
    if knowledge is None:
        raise NotSupported("This server keeps no knowledge collections")
    service: KnowledgeService = knowledge()
    return service


def collection_dto(c: Collection) -> dict[str, Any]:
    return {"name": c.name, "files": c.files, "passages": c.passages, "createdAt": iso(c.created_at)}


def file_dto(f: KnowledgeFile) -> dict[str, Any]:
    return {
        "name": f.name,
        "digest": f.digest,
        "size": f.size,
        "type": f.media_type,
        "passages": f.passages,
        "updatedAt": iso(f.updated_at),
    }


def added_dto(a: Added) -> dict[str, Any]:
    out: dict[str, Any] = {"name": a.name, "outcome": a.outcome, "passages": a.passages}
    if a.same_as is not None:
        out["sameAs"] = a.same_as
    return out


async def list_collections(request: Request) -> Response:
    found = await _service(request).collections(by=principal_of(request))
    return JSONResponse({"collections": [collection_dto(c) for c in found]})


async def create_collection(request: Request) -> Response:
    body = await read_json(request, {"name"})
    created = await _service(request).create(body.get("name"), by=principal_of(request))
    return JSONResponse({"name": body["name"], "created": created}, status_code=201 if created else 200)


async def delete_collection(request: Request) -> Response:
    await _service(request).drop(request.path_params["name"], by=principal_of(request))
    return Response(status_code=204)


async def list_files(request: Request) -> Response:
    found = await _service(request).files(request.path_params["name"], by=principal_of(request))
    return JSONResponse({"files": [file_dto(f) for f in found]})


async def add_files(request: Request) -> Response:
    if not request.headers.get("content-type", "").lower().startswith("multipart/form-data"):
        raise InvalidInput("Files are sent as multipart/form-data, each under the field `files`")
    limits = replace(request.app.state.services.attachment_limits, max_files=FILES_PER_REQUEST)
    try:
        async with asyncio.timeout(request.app.state.request_timeout):
            body, uploads = await files.form_body(request, limits)
    except TimeoutError:
        raise HTTPException(408, "The request body did not arrive in time") from None
    if body or not uploads:
        raise InvalidInput("Send one or more files under the field `files`, and nothing else")
    added = await _service(request).add(request.path_params["name"], uploads, by=principal_of(request))
    return JSONResponse({"files": [added_dto(a) for a in added]})


async def delete_file(request: Request) -> Response:
    name, file = request.path_params["name"], request.path_params["file"]
    await _service(request).delete_file(name, file, by=principal_of(request))
    return Response(status_code=204)


def _lines(raw: str | None) -> tuple[int, int]:
    """FIRST-LAST; (0, 0) when malformed, which the service refuses once it knows the file
    (an unknown one is 404 whatever the lines, as another user's is)."""
    first, _, last = (raw or "").partition("-")
    if not first.isdigit() or not (last or first).isdigit() or len(raw or "") > 24:
        return 0, 0
    return int(first), int(last or first)


async def read_passage(request: Request) -> Response:
    name, file = request.path_params["name"], request.path_params["file"]
    first, last = _lines(request.query_params.get("lines"))
    found = await _service(request).passage(name, file, first, last, by=principal_of(request))
    return JSONResponse(
        {"collection": name, "file": file, "passages": [{"first": c.first, "last": c.last, "text": c.text} for c in found]}
    )


NAME = Param("name", "path", {"type": "string", "minLength": 1, "maxLength": NAME_MAX})
FILE = Param("file", "path", {"type": "string", "minLength": 1, "maxLength": 255})
COLLECTION: Schema = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "files": {"type": "integer"},
        "passages": {"type": "integer"},
        "createdAt": {"type": "string", "format": "date-time"},
    },
}
FILE_INFO: Schema = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "digest": {"type": "string"},
        "size": {"type": "integer"},
        "type": {"type": "string"},
        "passages": {"type": "integer"},
        "updatedAt": {"type": "string", "format": "date-time"},
    },
}
ADDED: Schema = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "outcome": {"type": "string", "enum": ["added", "replaced", "unchanged", "duplicate"]},
        "passages": {"type": "integer"},
        "sameAs": {"type": "string", "description": "for a duplicate: the file of the collection with the same bytes"},
    },
}
UPLOAD: Schema = {
    "type": "object",
    "properties": {"files": {"type": "array", "items": {"type": "string", "format": "binary"}, "maxItems": FILES_PER_REQUEST}},
}

ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        "/api/knowledge",
        "GET",
        list_collections,
        "The user's knowledge collections, by name",
        Answer(schema={"type": "object", "properties": {"collections": {"type": "array", "items": COLLECTION}}}),
        errors=(503,),
    ),
    ApiRoute(
        "/api/knowledge",
        "POST",
        create_collection,
        "Create a collection (201; 200 when the user has it already)",
        Answer(201, {"type": "object", "properties": {"name": {"type": "string"}, "created": {"type": "boolean"}}}),
        body={
            "type": "object",
            "additionalProperties": False,
            "required": ["name"],
            "properties": {"name": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]{0,63}$"}},
        },
        errors=(400, 413),
    ),
    ApiRoute(
        "/api/knowledge/{name}",
        "DELETE",
        delete_collection,
        "Delete a collection with its files and everything derived from them",
        Answer(204),
        params=(NAME,),
        errors=(404,),
    ),
    ApiRoute(
        "/api/knowledge/{name}/files",
        "GET",
        list_files,
        "A collection's files",
        Answer(schema={"type": "object", "properties": {"files": {"type": "array", "items": FILE_INFO}}}),
        params=(NAME,),
        errors=(404,),
    ),
    ApiRoute(
        "/api/knowledge/{name}/files",
        "POST",
        add_files,
        "Add files to a collection (created if new): a file of the same name is replaced and re-indexed",
        Answer(schema={"type": "object", "properties": {"files": {"type": "array", "items": ADDED}}}),
        params=(NAME,),
        media={"multipart/form-data": UPLOAD},
        errors=(400, 404, 408, 413, 415, 422),
    ),
    ApiRoute(
        "/api/knowledge/{name}/files/{file}",
        "DELETE",
        delete_file,
        "Delete a file with its passages",
        Answer(204),
        params=(NAME, FILE),
        errors=(404,),
    ),
    ApiRoute(
        "/api/knowledge/{name}/files/{file}/passage",
        "GET",
        read_passage,
        "The passages of a file that hold lines FIRST-LAST (what a citation links to)",
        Answer(schema={"type": "object"}),
        params=(NAME, FILE, Param("lines", "query", {"type": "string", "pattern": "^[0-9]+(-[0-9]+)?$"}, required=True)),
        errors=(400, 404),
    ),
)
