"""Use cases that move conversations in and out whole: export (every branch, every message,
the approvals' decisions) and import (a Sophos export or ChatGPT's conversations.json)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from datetime import datetime

from domain.approvals import ApprovalRequest
from domain.attachments import PDF_TYPE, Upload
from domain.chatgpt import from_chatgpt, looks_like_chatgpt
from domain.errors import ConversationNotFound, InvalidImport, SophosError
from domain.model import Conversation, UserMessage, new_id, parse_conversation_id, utc_now
from domain.principals import LOCAL, Principal, owner_filter, sees
from domain.transfer import FORMAT, LIMITS, ApprovalCopy, ConversationCopy, Limits, from_document
from ports.approvals import ApprovalStore
from ports.attachments import AttachmentStore, TextExtractor
from ports.checkpoints import CheckpointPort
from ports.copies import ThreadCopies
from ports.runs import RunRepository
from ports.workers import Worker

log = logging.getLogger(__name__)

NOTHING = "nothing to import: the file holds no conversation with a message to keep"


def read_import(data: bytes, now: datetime, limits: Limits | None = None) -> list[ConversationCopy]:
    """Every conversation of a file to import, checked whole before anything is stored: a
    `sophos.conversation` document (or a list of them) or ChatGPT's conversations.json."""
    limits = limits or LIMITS  # read when called: tests narrow it
    if len(data) > limits.bytes:
        raise InvalidImport(f"the file is larger than {limits.bytes // (1024 * 1024)} MB")
    try:
        doc = json.loads(data)
    except RecursionError:
        raise InvalidImport("the file nests deeper than any export does") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise InvalidImport(f"the file is not JSON ({e})") from None
    items = doc if isinstance(doc, list) else [doc]
    if len(items) > limits.conversations:
        raise InvalidImport(f"the file holds more than {limits.conversations} conversations")
    if items and all(isinstance(d, dict) and d.get("format") == FORMAT for d in items):
        where = "conversation" if len(items) == 1 else "conversation {}"
        return [from_document(d, limits, where.format(i + 1)) for i, d in enumerate(items)]
    if isinstance(doc, list) and not doc:
        return []  # a list of no conversations, in either format
    if looks_like_chatgpt(doc):
        return from_chatgpt(doc, now, limits)
    if isinstance(doc, dict) and "format" in doc:
        return [from_document(doc, limits)]  # says what is wrong with its format or version
    raise InvalidImport("not a Sophos export (format sophos.conversation) nor ChatGPT's conversations.json")


def read_files(files: Sequence[bytes], now: datetime) -> list[ConversationCopy]:
    """Every conversation of the files, each checked whole; InvalidImport for the first
    malformed one, or when none holds anything to import."""
    copies = [copy for data in files for copy in read_import(data, now)]
    if len(copies) > LIMITS.conversations:
        raise InvalidImport(f"the files hold more than {LIMITS.conversations} conversations")
    if not copies:
        raise InvalidImport(NOTHING)
    return copies


class TransferService:
    def __init__(
        self,
        runs: RunRepository,
        threads: CheckpointPort,
        copies: ThreadCopies,
        approvals: ApprovalStore,
        clock: Callable[[], datetime] = utc_now,
        files: Callable[[], AttachmentStore] | None = None,
        extractor: TextExtractor | None = None,
        *,
        worker: Worker,
    ) -> None:
        self.worker = worker  # reads the files: a large one never holds the event loop
        self.files = files  # None: no file is exported, a file to import is refused
        self.extractor = extractor  # an imported PDF's text
        self.runs = runs
        self.threads = threads
        self.copies = copies
        self.approvals = approvals
        self.clock = clock

    async def export(
        self, conversation: object, *, by: Principal = LOCAL
    ) -> tuple[Conversation, ConversationCopy]:
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
        return conv, copy

    async def export_all(self, *, by: Principal = LOCAL) -> AsyncIterator[tuple[Conversation, ConversationCopy]]:
        """Every conversation `by` may reach, most recently updated first, one at a time (a
        conversation deleted meanwhile is left out)."""
        for conv in await self.runs.list_conversations(owner=owner_filter(by)):
            try:
                yield await self.export(conv.id, by=by)
            except ConversationNotFound:
                continue

    async def import_files(self, files: Sequence[bytes], *, by: Principal = LOCAL) -> list[Conversation]:
        """Store every conversation of the files, each as a new one (never over another);
        every file is checked first, on the worker, so a malformed one stores nothing at
        all, and a file with nothing to import is refused (InvalidImport)."""
        copies = await self.worker.run(read_files, files, self.clock())
        return await self.import_copies(copies, by=by)

    async def import_copies(self, copies: Sequence[ConversationCopy], *, by: Principal = LOCAL) -> list[Conversation]:
        return [await self._import(copy, by.user_id) for copy in copies]

    async def _with_text(self, files: Sequence[Upload]) -> tuple[Upload, ...]:
        if files and self.files is None:
            raise InvalidImport("this server does not store attachments")
        out = []
        for f in files:
            if f.attachment.media_type == PDF_TYPE and f.text is None and self.extractor is not None:
                try:
                    f = replace(f, text=await self.extractor.pdf_text(f.attachment.name, f.data))
                except SophosError as e:
                    raise InvalidImport(e.message) from None
            out.append(f)
        return tuple(out)

    async def _import(self, copy: ConversationCopy, owner: str) -> Conversation:
        """One conversation, all or nothing: what was written is deleted again on a failure."""
        files = await self._with_text(copy.files)
        cid = new_id()
        await self.runs.create_conversation(cid, copy.title, copy.created_at, owner=owner)
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
