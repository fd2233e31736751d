"""The OpenAPI 3 document of /api, written from the route table (entrypoints/http/api.py):
each route declares its parameters, request body, answer and error statuses once, and the
app mounts the same table, so the document cannot list a route the server does not serve
(a test fuzzes the API against it)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from domain.attachments import AttachmentLimits

Schema = dict[str, Any]
Endpoint = Callable[[Request], Awaitable[Response]]
ERROR: Schema = {"$ref": "#/components/schemas/Error"}


@dataclass(frozen=True)
class Param:
    name: str
    where: str  # path, query or header
    schema: Schema
    required: bool = False
    description: str = ""

    def document(self) -> Schema:
        out: Schema = {
            "name": self.name,
            "in": self.where,
            "required": self.required or self.where == "path",
            "schema": self.schema,
        }
        return {**out, "description": self.description} if self.description else out


@dataclass(frozen=True)
class Answer:
    """A success: its status, the schema of its body (None: no body) and its media type;
    `more`: other media types of the same answer, `headers`: the headers it sets."""

    status: int = 200
    schema: Schema | None = None
    media: str = "application/json"
    more: dict[str, Schema] = field(default_factory=dict)
    headers: dict[str, Schema] = field(default_factory=dict)

    def document(self) -> Schema:
        out: Schema = {"description": "OK"}
        if self.schema is not None:
            out["content"] = {self.media: {"schema": self.schema}, **{m: {"schema": s} for m, s in self.more.items()}}
        if self.headers:
            out["headers"] = self.headers
        return {str(self.status): out}


# a request body: its JSON schema; or one that depends on this server's attachment settings
Body = Schema | Callable[[AttachmentLimits], Schema]


@dataclass(frozen=True)
class ApiRoute:
    """One method of one path. `path` is Starlette's (a converter such as `{tool:path}` is
    left out of the document); `body`: a required JSON body, `media`: a body of other types
    (media type -> schema) instead; `errors`: the statuses of the error envelope it answers."""

    path: str
    method: str
    endpoint: Endpoint
    summary: str
    answer: Answer = Answer(schema={"type": "object"})
    params: tuple[Param, ...] = ()
    body: Body | None = None
    media: dict[str, Schema] | None = None
    errors: tuple[int, ...] = ()

    @property
    def template(self) -> str:
        return re.sub(r":\w+}", "}", self.path)

    def document(self, limits: AttachmentLimits) -> Schema:
        op: Schema = {"summary": self.summary}
        if self.params:
            op["parameters"] = [p.document() for p in self.params]
        if self.body is not None:
            schema = self.body(limits) if callable(self.body) else self.body
            op["requestBody"] = {"required": True, "content": {"application/json": {"schema": schema}}}
        elif self.media is not None:
            op["requestBody"] = {"required": True, "content": {m: {"schema": s} for m, s in self.media.items()}}
        errors = {str(s): {"description": "Error", "content": {"application/json": {"schema": ERROR}}} for s in self.errors}
        op["responses"] = {**self.answer.document(), **errors}
        return op


def openapi_document(routes: Sequence[ApiRoute], components: Schema, limits: AttachmentLimits) -> Schema:
    """The API as this server serves it (`limits`: its attachment settings)."""
    paths: dict[str, Schema] = {}
    for route in routes:
        paths.setdefault(route.template, {})[route.method.lower()] = route.document(limits)
    return {
        "openapi": "3.0.3",
        "info": {"title": "Sophos API", "version": "1"},
        "paths": paths,
        "components": {"schemas": components},
    }
