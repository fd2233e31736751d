"""LangGraph's cron API (`client.crons`) over the user's schedules (services.schedules): a cron
is a schedule whose firing runs a hosted graph with the graph's own input (domain.crons), so
it fires exactly once per firing as every schedule does (services.scheduler). Routes:
`POST /runs/crons` (a new thread per firing; `on_run_completed` delete by default, as
langgraph-api), `POST /threads/{id}/runs/crons` (the thread's own runs), `POST
/runs/crons/search` and `/runs/crons/count`, `GET`/`PATCH`/`DELETE /runs/crons/{id}`. The
shapes are langgraph-api's (its Cron); a schedule of Sophos's own agent (/api/schedules) is
no cron here. `schedule` takes five fields, or six with seconds first (domain.schedules);
`timezone` is IANA's (UTC by default). `multitask_strategy`, `checkpoint_during` and
`stream_resumable` are accepted and not kept: a firing that meets a run going on its thread
waits for the next tick, as a schedule's firing does."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from domain.crons import CronQuery, GraphInput, OnCompleted, check_webhook, parse_on_completed
from domain.errors import InvalidInput, NotSupported, ScheduleNotFound
from domain.graphs import GraphNotFound
from domain.model import iso
from domain.schedules import Schedule, ScheduleEdit, ScheduleSpec, Timing
from entrypoints.http.principal import principal_of
from entrypoints.lgapi import hosted
from entrypoints.lgapi.threads import bounded, read_body, services, thread_id
from services.schedules import ScheduleService

RUN_FIELDS = {
    "input",
    "config",
    "context",
    "interrupt_before",
    "interrupt_after",
    "stream_mode",
    "stream_subgraphs",
    "durability",
}
ACCEPTED = {"checkpoint_during", "stream_resumable", "multitask_strategy"}  # read, not kept
EDITABLE = RUN_FIELDS | ACCEPTED | {"schedule", "metadata", "webhook", "on_run_completed", "enabled", "timezone", "end_time"}
CREATE = EDITABLE | {"assistant_id"}
SEARCH = {"assistant_id", "thread_id", "enabled", "metadata", "limit", "offset", "sort_by", "sort_order", "select"}
CRON_FIELDS = (
    "cron_id",
    "assistant_id",
    "thread_id",
    "on_run_completed",
    "end_time",
    "schedule",
    "timezone",
    "created_at",
    "updated_at",
    "payload",
    "user_id",
    "next_run_date",
    "metadata",
    "enabled",
)


def _service(request: Request) -> ScheduleService:
    schedules = services(request).schedules
    if schedules is None:
        raise NotSupported("This server keeps no schedules")
    return schedules()


def _end(value: object) -> datetime | None:
    """An end time as the SDK sends it (isoformat(): without an offset read as UTC)."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value) if isinstance(value, str) and len(value) <= 40 else None
    except ValueError:
        when = None
    if when is None:
        raise HTTPException(422, "end_time must be an ISO 8601 time")
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _text(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise HTTPException(422, f"{name} must be a string")
    return value


def _flag(body: dict[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise HTTPException(422, f"{name} must be true or false")
    return value


async def _graph_input(request: Request, body: dict[str, Any], stateless: bool) -> GraphInput:
    ref = body.get("assistant_id")
    if not isinstance(ref, str) or not ref:
        raise HTTPException(422, "assistant_id is required")
    assistant = await hosted.assistant_of(request, ref)  # a made assistant, or a graph's start-up one
    if assistant is None:
        raise GraphNotFound(f"Assistant {ref[:64]!r} not found: a cron runs a hosted graph (LANGGRAPH_JSON)")
    on_completed = parse_on_completed(body.get("on_run_completed"))
    run = hosted.graph_run(body, "", assistant)
    return GraphInput.of(
        run, assistant.assistant_id, body.get("metadata") or {}, (on_completed or OnCompleted.DELETE) if stateless else None
    )


async def _create(request: Request, cid: str | None) -> Response:
    body = await read_body(request, CREATE)
    schedule = _text(body, "schedule")
    if schedule is None:
        raise HTTPException(422, "schedule is required")
    enabled = _flag(body, "enabled")
    spec = ScheduleSpec(
        Timing(schedule, _text(body, "timezone") or "UTC"),
        "",
        cid,
        ends_at=_end(body.get("end_time")),
        enabled=True if enabled is None else enabled,
        graph=await _graph_input(request, body, stateless=cid is None),
        webhook=check_webhook(body.get("webhook")),
    )
    made = await _service(request).create(spec, by=principal_of(request))
    return JSONResponse(cron_dict(made))


async def create_cron(request: Request) -> Response:
    return await _create(request, None)


async def create_thread_cron(request: Request) -> Response:
    return await _create(request, thread_id(request))


async def _cron(request: Request) -> Schedule:
    found = await _service(request).get(request.path_params["cron_id"], by=principal_of(request))
    if found.graph is None:
        raise ScheduleNotFound()
    return found


async def get_cron(request: Request) -> Response:
    return JSONResponse(cron_dict(await _cron(request)))


async def edit_of(request: Request, cron: Schedule, body: dict[str, Any]) -> ScheduleEdit:
    """An update's body as an edit of `cron`: the run's fields given replace the kept ones."""
    assert cron.graph is not None
    run = None
    if RUN_FIELDS & body.keys():
        assistant = await hosted.assistant_of(request, cron.graph.assistant_id) or await hosted.assistant_of(
            request, cron.graph.graph_id
        )
        if assistant is None:
            raise GraphNotFound(f"Graph {cron.graph.graph_id!r} is no longer served")
        run = hosted.graph_run({**payload_of(cron), **body}, "", assistant)
    on_completed = parse_on_completed(body.get("on_run_completed")) if cron.conversation_id is None else None
    metadata = body.get("metadata")
    return ScheduleEdit(
        cron=_text(body, "schedule"),
        tz=_text(body, "timezone"),
        ends_at=_end(body.get("end_time")),
        clear_end="end_time" in body and body["end_time"] is None,
        enabled=_flag(body, "enabled"),
        graph=cron.graph.edited(run, metadata if isinstance(metadata, dict) else None, on_completed),
        webhook=check_webhook(body.get("webhook")),
    )


async def patch_cron(request: Request) -> Response:
    body = await read_body(request, EDITABLE)
    if not body:
        raise InvalidInput("Request body cannot be empty")
    cron = await _cron(request)
    edited = await _service(request).edit(cron.id, await edit_of(request, cron, body), by=principal_of(request))
    return JSONResponse(cron_dict(edited))


async def delete_cron(request: Request) -> Response:
    cron = await _cron(request)
    await _service(request).delete(cron.id, by=principal_of(request))
    return Response(status_code=204)


def _query(body: dict[str, Any], paged: bool) -> CronQuery:
    order = body.get("sort_order") or "desc"
    if order not in ("asc", "desc"):
        raise HTTPException(422, 'sort_order must be "asc" or "desc"')
    tid = body.get("thread_id")
    return CronQuery(
        assistant_id=_text(body, "assistant_id"),
        thread_id=str(tid) if tid is not None else None,
        enabled=_flag(body, "enabled"),
        metadata=body.get("metadata") or {},
        limit=bounded(body.get("limit"), "limit", 10, 1, 1000) if paged else 1000,
        offset=bounded(body.get("offset"), "offset", 0, 0, 1_000_000) if paged else 0,
        sort_by=_text(body, "sort_by") or "created_at",
        descending=order == "desc",
    )


async def _matching(request: Request, query: CronQuery) -> list[Schedule]:
    found = await _service(request).list(by=principal_of(request))
    return [
        s
        for s in found
        if s.graph is not None
        and query.matches(s.graph.assistant_id, s.graph.graph_id, s.conversation_id, s.enabled, s.graph.metadata)
    ]


async def search_crons(request: Request) -> Response:
    body = await read_body(request, SEARCH)
    query = _query(body, paged=True)
    select = body.get("select") or list(CRON_FIELDS)
    if not all(f in CRON_FIELDS for f in select):
        raise HTTPException(422, f"select takes fields among {', '.join(CRON_FIELDS)}")
    page = query.page(await _matching(request, query), lambda s: cron_dict(s)[query.sort_by])
    return JSONResponse([{k: v for k, v in cron_dict(s).items() if k in select} for s in page])


async def count_crons(request: Request) -> Response:
    body = await read_body(request, {"assistant_id", "thread_id", "metadata"})
    return JSONResponse(len(await _matching(request, _query(body, paged=False))))


def payload_of(s: Schedule) -> dict[str, Any]:
    """The run a cron's firing starts, as langgraph-api's cron `payload`."""
    g = s.graph
    assert g is not None
    return {
        "assistant_id": g.assistant_id,
        "input": g.input,
        "config": dict(g.config),
        "context": g.context,
        "metadata": dict(g.metadata),
        "stream_mode": list(g.stream_modes),
        "interrupt_before": g.interrupt_before if isinstance(g.interrupt_before, str) else list(g.interrupt_before),
        "interrupt_after": g.interrupt_after if isinstance(g.interrupt_after, str) else list(g.interrupt_after),
        "stream_subgraphs": g.subgraphs,
        "durability": g.durability,
        **({"webhook": s.webhook} if s.webhook is not None else {}),
    }


def cron_dict(s: Schedule) -> dict[str, Any]:
    """A cron as langgraph-api's Cron (`updated_at`: the creation time; edits are not dated)."""
    g = s.graph
    assert g is not None
    return {
        "cron_id": s.id,
        "assistant_id": g.assistant_id,
        "thread_id": s.conversation_id,
        "on_run_completed": g.on_completed.value if g.on_completed is not None else None,
        "end_time": iso(s.ends_at) if s.ends_at is not None else None,
        "schedule": s.timing.cron,
        "timezone": s.timing.tz,
        "created_at": iso(s.created_at),
        "updated_at": iso(s.created_at),
        "payload": payload_of(s),
        "user_id": s.owner,
        "next_run_date": iso(s.next_at) if s.next_at is not None else None,
        "metadata": dict(g.metadata),
        "enabled": s.enabled,
    }
