"""The client over this machine's database: the use cases in this process."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from domain.attachments import AttachmentLimits
from domain.commands import Cancel, SendMessage, StartRun, start_command
from domain.errors import ModelBadResponse, ModelUnreachable, NotSupported
from domain.events import StreamEvent
from domain.model import parse_conversation_id
from domain.models import settings_change
from domain.organise import MAIN
from domain.queue import Multitask, QueuedMessage
from entrypoints.attachments import json_files
from entrypoints.cli.client import Json, SophosClient, Stopper
from entrypoints.dto import (
    audit_dto,
    detail_dto,
    model_dto,
    pending_dto,
    queue_dto,
    queued_dto,
    search_page_dto,
    settings_dto,
    settings_fields,
    summary_dto,
    usage_dto,
)
from entrypoints.schedule_dto import edit_of, schedules_dto, spec_of

if TYPE_CHECKING:
    from entrypoints.bundle import Services
    from entrypoints.cli.output import Printer
    from entrypoints.container import Container
    from services.knowledge import KnowledgeService
    from services.memory import MemoryService
    from services.schedules import ScheduleService
    from services.supervisor import Supervisor


def command_of(body: Json, limits: AttachmentLimits) -> StartRun:
    """The command a chat body names, as the API reads it (so both refuse the same input)."""
    return start_command(
        body.get("message"),
        body.get("conversation"),
        body.get("resume") is True,
        body.get("decision"),
        edit_of=body.get("editOf"),
        regenerate=body.get("regenerate") is True,
        decisions=body.get("decisions"),
        settings=settings_change(settings_fields(body)),
        multitask=body.get("multitask"),
        files=json_files(body.get("attachments"), limits),
    )


class LocalClient(SophosClient):
    in_process = True

    def __init__(self, services: Services, container: Container) -> None:
        self._services = services
        self._container = container
        self._supervisor: Supervisor | None = None

    async def _recover(self) -> None:
        # the full stack (LangGraph, the model client) loads only when there is a run to reclaim
        if await self._services.backend().runs().running_runs():
            from services.supervisor import Supervisor

            await Supervisor(self._services.runs()).recover()

    async def conversations(self, limit: int | None) -> list[Json]:
        await self._recover()
        service = self._services.conversations()
        # the main list, as GET /api/conversations gives it (not the archive)
        items = (await service.page(limit, shown=MAIN)).conversations if limit else await service.list(shown=MAIN)
        return [summary_dto(c) for c in items]

    async def find(self, id_prefix: str) -> list[Json]:
        return [summary_dto(c) for c in await self._services.conversations().find(id_prefix)]

    async def conversation(self, conversation: str) -> Json:
        await self._recover()
        detail = await self._services.conversations().get(conversation)
        waiting = await self._services.queue().waiting(detail.conversation.id)
        return {**detail_dto(detail), **pending_dto(detail), **queue_dto(waiting)}

    async def rename(self, conversation: str, title: str) -> Json:
        return summary_dto(await self._services.conversations().rename(conversation, title))

    async def delete(self, conversation: str) -> None:
        await self._services.conversations().delete(conversation)

    async def configure(self, conversation: str, settings: Json) -> Json:
        change = settings_change(settings_fields(settings))
        return settings_dto(await self._services.conversations().configure(conversation, change))

    async def models(self) -> Json:
        catalog = self._services.models()
        try:
            listed = await catalog.list()
        except (ModelUnreachable, ModelBadResponse) as e:
            return {"default": catalog.default, "models": [], "error": {"code": e.code.value, "message": e.message}}
        return {"default": catalog.default, "models": [model_dto(m, catalog.default) for m in listed]}

    async def switch_branch(self, conversation: str, number: int) -> Json:
        return detail_dto(await self._services.conversations().switch_branch(conversation, number))

    async def export(self, conversation: str, fmt: str) -> str:
        from entrypoints.export import export_text

        _, text = await export_text(self._services.conversations(), conversation, fmt)
        return text

    async def export_file(self, conversation: str | None) -> tuple[str, bytes]:
        from entrypoints.transfer_files import document_bytes, json_name
        from entrypoints.user_transfer import export_all

        service = self._services.transfer()
        if conversation is None:
            return await export_all(self._services)
        conv, copy = await service.export(conversation)
        return json_name(copy), document_bytes(conv, copy)

    async def import_file(self, data: bytes) -> list[Json]:
        from entrypoints.user_transfer import import_upload

        imported, _ = await import_upload(self._services, data)
        return [summary_dto(c) for c in imported]

    async def search(self, query: str, limit: int) -> Json:
        page = await self._services.search().search(query, limit)
        return search_page_dto(page)

    async def cancel(self, conversation: str) -> Json:
        r = await self._services.runs().cancel(Cancel(parse_conversation_id(conversation)))
        return {"conversation": r.conversation_id, "run": r.run_id, "status": r.status.value}

    async def allow_rules(self) -> list[Json]:
        # isoformat, not the API's milliseconds: what `approvals list --json` always printed here
        return [{"tool": r.tool, "since": r.since.isoformat()} for r in await self._services.allow_rules().list()]

    async def revoke_rule(self, tool: str) -> None:
        await self._services.allow_rules().revoke(tool)

    def _schedules(self) -> ScheduleService:
        schedules = self._services.schedules
        if schedules is None:
            raise NotSupported("This database keeps no schedules")
        return schedules()

    async def schedules(self) -> list[Json]:
        service = self._schedules()
        return await schedules_dto(service, await service.list())

    async def add_schedule(self, body: Json) -> Json:
        service = self._schedules()
        return (await schedules_dto(service, [await service.create(spec_of(body))]))[0]

    async def edit_schedule(self, schedule_id: str, body: Json) -> Json:
        service = self._schedules()
        return (await schedules_dto(service, [await service.edit(schedule_id, edit_of(body))]))[0]

    async def delete_schedule(self, schedule_id: str) -> None:
        await self._schedules().delete(schedule_id)

    async def usage(self, first: str | None, last: str | None, everyone: bool) -> list[Json]:
        from domain.principals import LOCAL
        from services.usage import parse_day

        getter = self._services.usage
        if getter is None:
            return []
        rows = await getter().report(parse_day(first, "from"), parse_day(last, "to"), everyone=everyone, by=LOCAL)
        return [usage_dto(r) for r in rows]

    async def audit(self, since: str | None, limit: int) -> list[Json]:
        from domain.principals import LOCAL
        from entrypoints.dto import parse_since

        getter = self._services.audit
        return [] if getter is None else [audit_dto(e) for e in await getter().entries(parse_since(since), limit, by=LOCAL)]

    async def memories(self) -> list[Json]:
        from entrypoints.http.memory import memory_dto

        return [memory_dto(m) for m in await self._memory().list()]

    async def forget_memory(self, memory: str) -> None:
        await self._memory().forget(memory)

    def _memory(self) -> MemoryService:
        if self._services.memory is None:
            raise NotSupported("This database keeps no memory")
        return self._services.memory()

    async def collections(self) -> list[Json]:
        from entrypoints.http.knowledge import collection_dto

        return [collection_dto(c) for c in await self._knowledge().collections()]

    async def knowledge_files(self, name: str) -> list[Json]:
        from entrypoints.http.knowledge import file_dto

        return [file_dto(f) for f in await self._knowledge().files(name)]

    async def add_knowledge(self, name: str, files: list[tuple[str, bytes]]) -> list[Json]:
        from domain.attachments import parse_upload
        from entrypoints.http.knowledge import added_dto

        uploads = [parse_upload(n, None, data, self._services.attachment_limits) for n, data in files]
        return [added_dto(a) for a in await self._knowledge().add(name, uploads)]

    async def remove_knowledge(self, name: str, file: str | None) -> None:
        if file is None:
            await self._knowledge().drop(name)
        else:
            await self._knowledge().delete_file(name, file)

    def _knowledge(self) -> KnowledgeService:
        if self._services.knowledge is None:
            raise NotSupported("This database keeps no knowledge collections")
        return self._services.knowledge()

    async def run(self, body: Json, printer: Printer, stopper: Stopper) -> tuple[str, str]:
        """The run in this process, with leases and cancel signals kept by a supervisor (no
        adoption: that is a server's); a closed stdout stops it as `cancelled`."""
        from domain.lifecycle import StopReason

        service = self._services.runs()
        if self._supervisor is None:
            from services.supervisor import Supervisor

            self._supervisor = Supervisor(service)
            await self._supervisor.start()
        printer.start()
        try:
            command = command_of(body, self._services.attachment_limits)
            if isinstance(command, SendMessage) and command.multitask is not Multitask.REJECT:
                sent = await self._services.queue().send(command)
                if isinstance(sent, QueuedMessage):  # the process running the conversation answers it
                    printer.event("queued", queued_dto(sent))
                    return sent.conversation_id, ""
                started = sent
            else:
                started = await service.start(command)
            printer.conversation = started.conversation_id
            stopper.attach(lambda reason: service.stop_local(started.run_id, reason))
            # on through the queued messages this process starts when the run completes
            events = await service.follow(started.conversation_id, 0, through_queue=True)
            if isinstance(events, StreamEvent):  # it ended before we could attach: the durable answer
                printer.event(events.event, events.data)
            else:
                async for _, ev in events:
                    closed = printer.pipe_closed
                    printer.event(ev.event, ev.data)
                    if printer.pipe_closed and not closed:  # nobody reads the answer any more
                        service.stop_local(started.run_id, StopReason.CANCEL)
                    if ev.event == "started":  # a queued message's run: Ctrl-C stops that one
                        run_id = str(ev.data["run"])
                        stopper.attach(partial(service.stop_local, run_id))
        finally:
            stopper.detach()
            printer.spinner.close()
        return started.conversation_id, started.run_id

    async def aclose(self) -> None:
        from entrypoints.container import close_container

        try:
            if self._supervisor is not None:
                await self._supervisor.close()
        finally:
            await close_container(self._container)
