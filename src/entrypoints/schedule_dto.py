"""Schedules as the API's JSON (issue 46): a request body read into the domain's spec or
edit, a schedule and a firing written out; shared by /api (entrypoints/http/schedules.py)
and the CLI's local client, so both read and answer alike."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from domain.errors import InvalidInput
from domain.model import Run, iso, parse_conversation_id
from domain.schedules import (
    Firing,
    Schedule,
    ScheduleEdit,
    ScheduleSpec,
    Timing,
    check_message_text,
    parse_catch_up,
)
from services.schedules import ScheduleService

FIELDS = {"cron", "at", "tz", "message", "catchUp", "endsAt", "enabled", "webhook"}  # what a PATCH may change


def _when(value: object, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 40:
        raise InvalidInput(f"{name} must be an ISO 8601 time with an offset")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"{name} must be an ISO 8601 time with an offset") from None
    if parsed.tzinfo is None:
        raise InvalidInput(f"{name} must carry a time zone offset")
    return parsed


def _text(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    return value


def _flag(body: dict[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise InvalidInput(f"{name} must be true or false")
    return value


def spec_of(body: dict[str, Any]) -> ScheduleSpec:
    cid = body.get("conversationId")
    enabled = _flag(body, "enabled")
    return ScheduleSpec(
        Timing(_text(body, "cron"), _text(body, "tz") or "UTC", _when(body.get("at"), "at")),
        check_message_text(body.get("message")),
        parse_conversation_id(cid) if cid is not None else None,
        parse_catch_up(body.get("catchUp")),
        _when(body.get("endsAt"), "endsAt"),
        True if enabled is None else enabled,
        webhook=_text(body, "webhook"),
    )


def edit_of(body: dict[str, Any]) -> ScheduleEdit:
    catch_up = body.get("catchUp")
    return ScheduleEdit(
        cron=_text(body, "cron"),
        tz=_text(body, "tz"),
        at=_when(body.get("at"), "at"),
        message=_text(body, "message"),
        catch_up=parse_catch_up(catch_up) if catch_up is not None else None,
        ends_at=_when(body.get("endsAt"), "endsAt"),
        clear_end="endsAt" in body and body["endsAt"] is None,
        enabled=_flag(body, "enabled"),
        webhook=_text(body, "webhook"),
        clear_webhook="webhook" in body and body["webhook"] is None,
    )


def _iso(value: datetime | None) -> str | None:
    return iso(value) if value is not None else None


def schedule_dto(s: Schedule) -> dict[str, Any]:
    return {
        "id": s.id,
        "cron": s.timing.cron,
        "at": _iso(s.timing.at),
        "tz": s.timing.tz,
        "message": s.message,
        "conversationId": s.conversation_id,
        "catchUp": s.catch_up.value,
        "enabled": s.enabled,
        "endsAt": _iso(s.ends_at),
        "nextAt": _iso(s.next_at),
        "createdAt": iso(s.created_at),
        "lastRunId": s.last_run_id,
        "lastFiredFor": _iso(s.last_fired_for),
        "graphId": s.graph.graph_id if s.graph is not None else None,
        "webhook": s.webhook,
    }


def firing_dto(f: Firing) -> dict[str, Any]:
    return {
        "scheduledFor": iso(f.scheduled_for),
        "runId": f.run_id,
        "conversationId": f.conversation_id,
        "queued": f.queued,
        "redo": f.redo,
    }


def last_run_dto(run: Run | None) -> dict[str, Any] | None:
    """The outcome of a schedule's last run (None: none started yet, or it is gone)."""
    if run is None:
        return None
    error = run.error
    return {
        "id": run.id,
        "conversationId": run.conversation_id,
        "status": run.status.value,
        "finishedAt": _iso(run.finished_at),
        "error": {"code": error.code, "message": error.message} if error else None,
    }


async def schedules_dto(service: ScheduleService, schedules: Sequence[Schedule]) -> list[dict[str, Any]]:
    """The schedules as JSON, each with `lastRun`: the outcome of the run it last started."""
    last = await service.last_runs(schedules)
    return [{**schedule_dto(s), "lastRun": last_run_dto(last.get(s.id))} for s in schedules]
