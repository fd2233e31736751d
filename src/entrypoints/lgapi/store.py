"""LangGraph's `/store/*` (the SDK's `client.store`): items under the caller's own namespaces
(services.store). The shapes are langgraph-api's: a put or a delete answers 204, an item
that is not there (or is another user's: the same thing) answers `null`, a search
`{"items": [...]}` and a namespace listing `{"namespaces": [...]}`; a namespace that is not
a list of non-empty labels without periods is 422, as there."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from domain.errors import InvalidInput, NotSupported
from domain.model import iso
from domain.store import ListNamespaces, PutItem, SearchItems, StoreItem, check_key, check_namespace, check_ttl
from entrypoints.http.principal import principal_of
from entrypoints.lgapi.threads import read_body, services
from services.store import StoreService

T = TypeVar("T")


def _store(request: Request) -> StoreService:
    getter = services(request).store
    if getter is None:
        raise NotSupported("This server has no store")
    return getter()


def item_dict(item: StoreItem) -> dict[str, Any]:
    out: dict[str, Any] = {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": dict(item.value),
        "created_at": iso(item.created_at),
        "updated_at": iso(item.updated_at),
    }
    if item.score is not None:
        out["score"] = item.score
    return out


def _namespace(value: object, name: str = "namespace", empty: bool = False) -> tuple[str, ...]:
    if value is None and empty:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise HTTPException(422, f"{name} must be a list of labels")
    return tuple(value)


def _invalid_as_422(build: Callable[..., T], *args: Any) -> T:
    """A request the domain refuses is 422 here, as langgraph-api's validation answers."""
    try:
        return build(*args)
    except InvalidInput as e:
        raise HTTPException(422, e.message) from None


def _index(value: object) -> bool:
    if value is None or value is False:
        return value is None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return True  # the fields to index: every string of the value is indexed (full text has no field paths)
    raise HTTPException(422, "index must be false, null or a list of field paths")


async def put_item(request: Request) -> Response:
    body = await read_body(request, {"namespace", "key", "value", "index", "ttl"})
    ttl = body.get("ttl")
    item = _invalid_as_422(
        PutItem,
        _namespace(body.get("namespace")),
        body.get("key"),
        body.get("value"),
        _invalid_as_422(check_ttl, ttl) if ttl is not None else None,
        _index(body.get("index")),
    )
    await _store(request).put(item, by=principal_of(request))
    return Response(status_code=204)


def _refresh(raw: str | None) -> bool:
    if raw is None:
        return False
    if raw.lower() not in ("true", "false"):
        raise HTTPException(422, "refresh_ttl must be true or false")
    return raw.lower() == "true"


async def get_item(request: Request) -> Response:
    params = request.query_params
    key = params.get("key")
    if not key:
        raise InvalidInput("Key is required")
    namespace = _invalid_as_422(check_namespace, tuple(params.get("namespace", "").split(".")))
    _invalid_as_422(check_key, key)
    found = await _store(request).get(namespace, key, _refresh(params.get("refresh_ttl")), by=principal_of(request))
    return JSONResponse(item_dict(found) if found is not None else None)


async def delete_item(request: Request) -> Response:
    body = await read_body(request, {"namespace", "key"})
    namespace = _invalid_as_422(check_namespace, _namespace(body.get("namespace")))
    await _store(request).delete(namespace, _invalid_as_422(check_key, body.get("key")), by=principal_of(request))
    return Response(status_code=204)


def _flag(value: object, name: str) -> bool:
    if value is not None and not isinstance(value, bool):
        raise HTTPException(422, f"{name} must be true or false")
    return bool(value)


def _filter(value: object) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise HTTPException(422, "filter must be an object")
    return value


async def search_items(request: Request) -> Response:
    body = await read_body(request, {"namespace_prefix", "filter", "limit", "offset", "query", "refresh_ttl"})
    query = _invalid_as_422(
        SearchItems,
        _namespace(body.get("namespace_prefix"), "namespace_prefix", empty=True),
        body.get("query"),
        _filter(body.get("filter")),
        10 if body.get("limit") is None else body["limit"],
        body.get("offset") or 0,
        _flag(body.get("refresh_ttl"), "refresh_ttl"),
    )
    found = await _store(request).search(query, by=principal_of(request))
    return JSONResponse({"items": [item_dict(i) for i in found]})


async def list_namespaces(request: Request) -> Response:
    body = await read_body(request, {"prefix", "suffix", "max_depth", "limit", "offset"})
    prefix, suffix = body.get("prefix"), body.get("suffix")
    query = _invalid_as_422(
        ListNamespaces,
        _namespace(prefix, "prefix") if prefix else None,
        _namespace(suffix, "suffix") if suffix else None,
        body.get("max_depth"),
        100 if body.get("limit") is None else body["limit"],
        body.get("offset") or 0,
    )
    found = await _store(request).namespaces(query, by=principal_of(request))
    return JSONResponse({"namespaces": [list(ns) for ns in found]})
