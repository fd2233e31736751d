"""The container's factories of conversations' storage work (entrypoints/container.py): a
conversation's service, the copies an import, an export or a duplicate makes, and the
workers that read and build them, each importing its adapter when first called."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from entrypoints.lazy import LazyCopies, LazyThreads
from ports.attachments import TextExtractor
from ports.backend import RunStore
from ports.checkpoints import CheckpointPort
from ports.copies import ThreadCopies
from ports.workers import Worker
from services.audit import AuditTrail
from services.conversations import ConversationService
from services.models import ModelCatalog
from services.presets import PresetService
from services.runs import RunService
from services.transfer import TransferService
from services.unsaved import UnsavedOutcomes

if TYPE_CHECKING:  # imported when first called: LangGraph loads with the first conversation's work
    from adapters.langgraph.saver import Saver


def conversations(
    store: RunStore,
    threads: Callable[[], CheckpointPort],
    service: Callable[[], RunService],
    catalog: Callable[[], ModelCatalog],
    saver: Callable[[], Saver],
    worker: Callable[[], Worker],
    unsaved: UnsavedOutcomes,
    presets: Callable[[], PresetService],
    audit: AuditTrail,
) -> ConversationService:
    async def is_active(conversation_id: str) -> bool:
        return await service().is_active(conversation_id)

    lazy = LazyThreads(threads)
    lazy_copies = LazyCopies(lambda: copies(threads(), saver(), worker()))
    return ConversationService(
        store,
        lazy,
        is_active,
        store,
        branches=lazy,
        approvals=store,
        copies=lazy_copies,
        catalog=catalog,
        unsaved=unsaved,
        defaults=lambda user: presets().defaults_for(user),
        audit=audit,
    )


def copies(threads: CheckpointPort, saver: Saver, worker: Worker) -> ThreadCopies:
    from adapters.langgraph.copies import LangGraphCopies
    from adapters.langgraph.engine import LangGraphThreads

    assert isinstance(threads, LangGraphThreads)  # what threads builds, on `saver`
    return LangGraphCopies(threads, saver, worker)


# the address space of the import worker: a file at the limits (64 MB of ChatGPT's JSON, 8
# conversations of 20,000 messages) peaked at 421 MB resident; a file that would need more
# is refused, never the server's memory
IMPORT_MEMORY = 2 * 1024 * 1024 * 1024


def import_worker() -> Iterator[Worker]:
    from adapters.system.processes_pool import WorkerProcesses
    from domain.errors import InvalidImport

    # one import read at a time, whatever the number sent, in a process of its own: the
    # file's parsed objects never enter the server's heap (adapters/system/processes_pool.py)
    yield WorkerProcesses(1, IMPORT_MEMORY, lambda: InvalidImport("the file needs more memory than an import may use"))


def bulk_worker() -> Iterator[Worker]:
    from adapters.system.workers import WorkerThreads

    # the zip of every conversation, an upload unpacked: asyncio's default executor is
    # storage's (LangGraph's PostgreSQL saver writes through it), a request's large work never goes there
    yield WorkerThreads("sophos-bulk", 2)


def transfer(
    store: RunStore,
    threads: Callable[[], CheckpointPort],
    files: Callable[[], Saver],
    reader: Worker,
    builder: Callable[[], Worker],
    extractor: TextExtractor,
    audit: AuditTrail,
) -> TransferService:
    return TransferService(
        store,
        LazyThreads(threads),
        LazyCopies(lambda: copies(threads(), files(), builder())),
        store,
        files=files,
        extractor=extractor,
        worker=reader,
        audit=audit,
    )
