"""Use cases that move conversations in and out whole: export (every branch, every message,
the approvals' decisions) and import (a Sophos export or ChatGPT's conversations.json)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from datetime import datetime

from domain.approvals import ApprovalRequest
from domain.attachments import PDF_TYPE, Upload
from domain.audit import Action
from domain.errors import AttachmentUnreadable, ConversationNotFound, InvalidImport
from domain.model import Conversation, TitleSource, UserMessage, new_id, parse_conversation_id, utc_now
from domain.organise import count_turns
from domain.principals import LOCAL, Principal, owner_filter, sees
from domain.transfer import ApprovalCopy, ConversationCopy
from ports.approvals import ApprovalStore
from ports.attachments import AttachmentStore, TextExtractor
from ports.checkpoints import CheckpointPort
from ports.copies import ThreadCopies
from ports.runs import RunRepository
from ports.workers import Worker
from services.audit import NO_AUDIT, AuditTrail

log = logging.getLogger(__name__)


class TransferService:
    def __init__(
        self,
        runs: RunRepository,
        threads: CheckpointPort,
        copies: ThreadCopies,
        approvals: ApprovalStore,
        files: Callable[[], AttachmentStore] | None = None,
        extractor: TextExtractor | None = None,
        *,
        worker: Worker,
        clock: Callable[[], datetime] = utc_now,
        audit: AuditTrail = NO_AUDIT,
    ) -> None:
        self.audit = audit  # each export and import
        self.clock = clock  # an import's times where the file gives none
        self.worker = worker  # reads the files: a large one never holds the event loop
        self.files = files  # None: no file is exported, a file to import is refused
        self.extractor = extractor  # an imported PDF's text
        self.runs = runs
        self.threads = threads
        self.copies = copies
        self.approvals = approvals

    async def export(self, conversation: object, *, by: Principal = LOCAL) -> tuple[Conversation, ConversationCopy]:
        """The conversation whole, as its summary says and its thread holds it."""
        conv = await self.runs.get_conversation(parse_conversation_id(conversation))
        if conv is None or not sees(by, conv.owner):
            raise ConversationNotFound()
        branches, active = await self.copies.read(conv.id)
        approvals = tuple(
            ApprovalCopy(r.call, r.server, r.description, r.requested_at, r.decision, r.decided_at)
            for r in await self.approvals.requests(conv.id)
        )
        copy = ConversationCopy(conv.title, conv.created_at, conv.updated_at, branches, active, approvals)
        digests = copy.digests()
        if digests and self.files is not None:
            stored = await self.files().files(conv.id, digests)
            names = {a.digest: a for b in branches for m in b.messages if isinstance(m, UserMessage) for a in m.attachments}
            copy = replace(copy, files=tuple(Upload(names[d], f.data, f.text) for d, f in stored.items()))
        await self.audit.record(Action.EXPORT, conv.id, "json")
        return conv, copy

    async def export_all(self, *, by: Principal = LOCAL) -> AsyncIterator[tuple[Conversation, ConversationCopy]]:
        """Every conversation `by` may reach, most recently updated first, one at a time (a
        conversation deleted meanwhile is left out)."""
        for conv in await self.runs.list_conversations(owner=owner_filter(by)):
            try:
                yield await self.export(conv.id, by=by)
            except ConversationNotFound:
                continue

    async def import_files(
        self,
        files: Sequence[bytes],
        read: Callable[[Sequence[bytes], datetime], list[ConversationCopy]],
        *,
        by: Principal = LOCAL,
    ) -> list[Conversation]:
        """Store every conversation of the files, each as a new one (never over another).
        `read` (the edge's: entrypoints/transfer_document.py) checks every file whole first, on
        the worker, so a malformed one stores nothing at all and a large one never holds the
        event loop; a file with nothing to import is refused (InvalidImport)."""
        copies = await self.worker.run(read, files, self.clock())
        return await self.import_copies(copies, by=by)

    async def import_copies(self, copies: Sequence[ConversationCopy], *, by: Principal = LOCAL) -> list[Conversation]:
        """Store every conversation, each as a new one (never over another). The edge reads
        the files whole first (entrypoints/transfer_document.py), so a malformed one stores
        nothing at all."""
        imported = [await self._import(copy, by.user_id) for copy in copies]
        for conv in imported:
            await self.audit.record(Action.IMPORT, conv.id, conv.title)
        return imported

    async def _with_text(self, files: Sequence[Upload]) -> tuple[Upload, ...]:
        if files and self.files is None:
            raise InvalidImport("this server does not store attachments")
        out = []
        for f in files:
            if f.attachment.media_type == PDF_TYPE and f.text is None and self.extractor is not None:
                try:
                    f = replace(f, text=await self.extractor.pdf_text(f.attachment.name, f.data))
                except AttachmentUnreadable as e:  # the file's fault; a busy reader (PdfBusy) is not
                    raise InvalidImport(e.message) from None
            out.append(f)
        return tuple(out)

    async def _import(self, copy: ConversationCopy, owner: str) -> Conversation:
        """One conversation, all or nothing: what was written is deleted again on a failure."""
        files = await self._with_text(copy.files)
        cid = new_id()
        # a title that came with the conversation is kept: the model never replaces it
        await self.runs.create_conversation(cid, copy.title, copy.created_at, owner=owner, title_by=TitleSource.USER)
        try:
            if files and self.files is not None:  # stored with the first checkpoint naming each
                self.files().stage_files(cid, files)
            await self.copies.write(cid, copy.branches, copy.active)
            for a in copy.approvals:
                await self.approvals.add_request(
                    ApprovalRequest(cid, a.call, None, a.server, a.description, requested_at=a.requested_at)
                )
                if a.decision is not None:
                    await self.approvals.decide(cid, {a.call.id: a.decision}, a.decided_at or a.requested_at)
            await self.runs.restore_conversation(cid, copy.message_count, copy.updated_at)
            await self.runs.set_turns(cid, count_turns(copy.content(copy.active)))
        except BaseException:
            try:
                await self.threads.delete_thread(cid)
                await self.runs.delete_conversation(cid)
            except Exception:  # the import's own failure is the one to report
                log.exception("could not remove the partly imported conversation %s", cid)
            raise
        finally:
            if files and self.files is not None:
                self.files().unstage_files(cid)
        conv = await self.runs.get_conversation(cid)
        if conv is None:  # deleted by someone else at once
            raise ConversationNotFound()
        return conv
