"""Use cases that read and manage conversations: list, get, export, rename, delete."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from domain.approvals import ApprovalRequest, decided_on, waiting, waiting_message
from domain.audit import Action, changed_fields
from domain.branches import Branch, BranchMarker, fork_messages, fork_title, markers
from domain.errors import (
    BranchNotFound,
    ConversationExists,
    ConversationNotFound,
    DecisionRequired,
    InvalidInput,
    NotSupported,
    SessionInProgress,
    StorageFailure,
)
from domain.ids import MAX_MATCHES, parse_id_prefix
from domain.lifecycle import resumable
from domain.model import (
    NEW_CONVERSATION_TITLE,
    AssistantMessage,
    CheckpointSummary,
    ContextView,
    Conversation,
    Message,
    PendingCall,
    Run,
    RunStatus,
    ThreadHead,
    clean_title,
    new_id,
    parse_conversation_id,
    utc_now,
)
from domain.models import ChatSettings, SettingsChange, settings_of
from domain.organise import ALL_SHOWN, Organise, Shown, count_turns
from domain.principals import LOCAL, Principal, owner_filter, sees
from domain.transfer import ConversationCopy
from ports.approvals import NO_APPROVALS, ApprovalStore
from ports.branches import BranchPort
from ports.checkpoints import CheckpointPort
from ports.copies import ThreadCopies
from ports.journal import ToolJournal
from ports.runs import RunRepository
from services.audit import NO_AUDIT, AuditTrail
from services.listing import decode_cursor, encode_cursor, page_size, title_query
from services.models import ModelCatalog
from services.pending import annotate_pending
from services.unsaved import UnsavedOutcomes, shown

MAX_METADATA = 16 * 1024  # bytes of a thread's metadata as JSON


@dataclass(frozen=True)
class ConversationDetail:
    conversation: Conversation
    messages: tuple[Message, ...]
    resumable: bool
    pending_calls: tuple[PendingCall, ...] = ()
    pending_approvals: tuple[ApprovalRequest, ...] = ()  # undecided, their calls still pending
    branches: tuple[Branch, ...] = ()  # empty: never forked (one branch, number 1)
    decided: tuple[ApprovalRequest, ...] = ()  # the decisions given on this thread's calls

    @property
    def markers(self) -> dict[int, BranchMarker]:
        """The alternatives at each message of the active branch that has siblings."""
        return markers(self.branches, len(self.messages))

    @property
    def active_branch(self) -> int:
        return next((b.number for b in self.branches if b.active), 1)

    @property
    def decision_required(self) -> bool:
        return self.resumable and any(p.needs_decision for p in self.pending_calls)

    @property
    def context(self) -> ContextView | None:
        """What the model saw on its latest call: the view stored with its latest reply."""
        return latest_context(self.messages)


def latest_context(messages: Sequence[Message]) -> ContextView | None:
    for m in reversed(messages):
        if isinstance(m, AssistantMessage) and m.context is not None:
            return m.context
    return None


@dataclass(frozen=True)
class Page:
    conversations: Sequence[Conversation]
    next_cursor: str | None


@dataclass(frozen=True)
class Transcript:
    """The active branch's messages; `sent_from`: where the model's view began on its latest
    call; `branch`: (active branch, number of branches) of a conversation that has several."""

    conversation: Conversation
    messages: Sequence[Message]
    sent_from: int | None = None
    branch: tuple[int, int] | None = None


@dataclass(frozen=True)
class CheckpointHistory:
    """Every checkpoint the thread's log keeps, oldest first, and `content(branch)`: a
    branch's messages now (None for one it cannot tell), for the messages a checkpoint took
    in before its last one."""

    conversation: Conversation
    checkpoints: Sequence[CheckpointSummary]
    content: Callable[[int], Sequence[Message] | None]


class ConversationService:
    def __init__(
        self,
        runs: RunRepository,
        checkpoints: CheckpointPort,
        is_active: Callable[[str], Awaitable[bool]],
        journal: ToolJournal,
        clock: Callable[[], datetime] = utc_now,
        branches: BranchPort | None = None,
        approvals: ApprovalStore = NO_APPROVALS,
        catalog: Callable[[], ModelCatalog] | None = None,
        copies: ThreadCopies | None = None,
        unsaved: UnsavedOutcomes | None = None,
        defaults: Callable[[str], Awaitable[ChatSettings]] | None = None,
        audit: AuditTrail = NO_AUDIT,
    ) -> None:
        self.audit = audit  # deletions and settings changes
        self.defaults = defaults  # a user's saved default settings (services.presets)
        self.unsaved = unsaved or UnsavedOutcomes()  # the run service's: outcomes the store refused
        self.catalog = catalog  # a getter: reading conversations never builds a model client
        self.copies = copies  # every branch's messages, for the JSONL export's new messages
        self.branch_store = branches
        self.approvals = approvals
        self.journal = journal
        self.runs = runs
        self.checkpoints = checkpoints
        self.is_active = is_active
        self.clock = clock

    async def list(self, query: object = None, *, by: Principal = LOCAL, shown: Shown = ALL_SHOWN) -> Sequence[Conversation]:
        """Every kept conversation `shown` names (whose title contains `query`), most
        recently updated first."""
        return await self._shown(
            await self.runs.list_conversations(query=title_query(query), owner=owner_filter(by), shown=shown)
        )

    async def page(
        self,
        limit: object = None,
        before: object = None,
        query: object = None,
        *,
        by: Principal = LOCAL,
        shown: Shown = ALL_SHOWN,
    ) -> Page:
        """A page of `limit` conversations `shown` names after the cursor `before` (whose
        title contains `query`)."""
        size = page_size(limit)
        cursor = decode_cursor(before) if isinstance(before, str) and before else None
        items = await self.runs.list_conversations(
            limit=size + 1, before=cursor, query=title_query(query), owner=owner_filter(by), shown=shown
        )
        more = len(items) > size
        items = await self._shown(items[:size])
        return Page(items, encode_cursor(items[-1]) if more and items else None)

    async def create(self, conversation: object = None, *, by: Principal = LOCAL) -> tuple[Conversation, bool]:
        """An empty conversation with id `conversation` (a new id when None), and whether
        it was made now: an id `by` already holds answers that conversation; an id another
        user holds is ConversationExists, the answer a taken id gets whoever holds it (ids
        are global: it cannot be made, and whose it is stays unsaid)."""
        cid = new_id() if conversation is None else parse_conversation_id(conversation)
        found = await self.runs.get_conversation(cid)
        if found is not None:
            if not sees(by, found.owner):
                raise ConversationExists()
            return found, False
        settings = await self.defaults(by.user_id) if self.defaults is not None else ChatSettings()
        return await self.runs.create_conversation(cid, NEW_CONVERSATION_TITLE, self.clock(), settings, owner=by.user_id), True

    async def metadata(self, conversation_ids: Sequence[str]) -> Mapping[str, Mapping[str, Any]]:
        """The thread metadata stored for those of the conversations that have some."""
        return await self.runs.thread_metadata(conversation_ids)

    async def merge_metadata(self, conversation: object, metadata: object, *, by: Principal = LOCAL) -> None:
        """Merge a JSON object into the conversation's thread metadata (at most
        MAX_METADATA bytes as JSON); NOT_FOUND for an unknown conversation."""
        cid = parse_conversation_id(conversation)
        if not isinstance(metadata, dict):
            raise InvalidInput("metadata must be an object")
        try:
            size = len(json.dumps(metadata, ensure_ascii=False, allow_nan=False).encode())
        except (UnicodeEncodeError, ValueError, RecursionError):
            raise InvalidInput("metadata must be JSON of valid Unicode, without NaN or infinities") from None
        if size > MAX_METADATA:
            raise InvalidInput(f"metadata must be at most {MAX_METADATA} bytes as JSON")
        if not by.sees_all:
            await self.summary(cid, by=by)
        if metadata and not await self.runs.merge_thread_metadata(cid, metadata):
            raise ConversationNotFound()

    async def run_kwargs(self, conversation: object, run_id: str, *, by: Principal = LOCAL) -> Mapping[str, Any]:
        """What a client API kept with the conversation's run `run_id` (LangGraph's run
        kwargs: its stream modes); empty when nothing. NOT_FOUND for an unknown conversation."""
        cid = parse_conversation_id(conversation)
        found = await self.runs.run_kwargs(cid, run_id, owner_filter(by))
        if found is None:
            await self.summary(cid, by=by)  # NOT_FOUND for another user's, as for an unknown one
        return found or {}

    async def keep_run_kwargs(
        self, conversation: object, run_id: str, kwargs: Mapping[str, Any], *, by: Principal = LOCAL
    ) -> None:
        """Keep a JSON object with the conversation's run `run_id` (or the queued message
        whose run will take that id), where every process reads it, across restarts."""
        if not await self.runs.set_run_kwargs(parse_conversation_id(conversation), run_id, kwargs, owner_filter(by)):
            raise ConversationNotFound()  # unknown, or another user's: the same answer

    async def head(self, conversation: object, *, by: Principal = LOCAL) -> ThreadHead:
        """What the conversation's latest checkpoint says (NOT_FOUND for an unknown one)."""
        conv = await self.summary(conversation, by=by)
        return await self.checkpoints.head(conv.id)

    async def runs_of(self, conversation: object, limit: int, *, by: Principal = LOCAL) -> Sequence[Run]:
        """The conversation's latest `limit` runs, newest first."""
        conv = await self.summary(conversation, by=by)
        return await self.runs.recent_runs(conv.id, limit)

    async def run(self, conversation: object, run_id: object, *, by: Principal = LOCAL) -> Run:
        """Run `run_id` of the conversation; NOT_FOUND when it is another's or unknown."""
        conv = await self.summary(conversation, by=by)
        found = await self.runs.get_run(parse_conversation_id(run_id)) if isinstance(run_id, str) else None
        if found is None or found.conversation_id != conv.id:
            raise ConversationNotFound("Run Not Found")
        return found

    async def checkpoint_log(self, conversation: object, *, by: Principal = LOCAL) -> Sequence[CheckpointSummary]:
        """Every checkpoint the thread's log keeps, oldest first."""
        conv = await self.summary(conversation, by=by)
        return await self.checkpoints.list_checkpoints(conv.id)

    async def summary(self, conversation: object, *, by: Principal = LOCAL) -> Conversation:
        cid = parse_conversation_id(conversation)
        conv = await self.runs.get_conversation(cid)
        if conv is None or not sees(by, conv.owner):
            raise ConversationNotFound()
        return await self._shown_one(conv)

    async def _shown(self, items: Sequence[Conversation]) -> Sequence[Conversation]:
        return [await self._shown_one(conv) for conv in items]

    async def _shown_one(self, conv: Conversation) -> Conversation:
        """The conversation as reads show it: a run the store still calls `running` whose
        outcome this process holds unwritten reads as that outcome (services.unsaved)."""
        if (held := self.unsaved.held(conv)) is None:
            return conv
        latest = await self.runs.latest_run(conv.id)
        if latest is not None and latest.id == held.run_id and latest.status is RunStatus.RUNNING:
            return shown(conv, held)
        self.unsaved.drop(conv.id, held.run_id)  # written meanwhile, or another run since
        return conv

    async def find(self, id_prefix: object, *, by: Principal = LOCAL) -> Sequence[Conversation]:
        """The conversations whose id starts with `id_prefix` (at most MAX_MATCHES + 1, so
        a caller can tell there are more), most recently updated first."""
        return await self._shown(
            await self.runs.find_conversations(parse_id_prefix(id_prefix), MAX_MATCHES + 1, owner_filter(by))
        )

    async def get(self, conversation: object, *, by: Principal = LOCAL) -> ConversationDetail:
        """Summary, messages of the latest checkpoint, and whether it can be resumed:
        pending work (`next` non-empty) and no active run."""
        conv = await self.summary(conversation, by=by)
        thread = await self.checkpoints.get_thread(conv.id)
        head = await self.checkpoints.head(conv.id)
        can_resume = resumable(head, await self.is_active(conv.id))
        pending = await annotate_pending(thread.pending_calls, self.journal, conv.id)
        branches = tuple(await self.branch_store.branches(conv.id)) if self.branch_store else ()
        requests = await self.approvals.requests(conv.id)
        asked = waiting(requests, pending) if pending else ()
        turns = count_turns(thread.messages)
        if conv.turns != turns:  # counted before, or branches switched
            conv = replace(conv, turns=turns)
            with suppress(StorageFailure):  # best effort: a read never fails on a full disk
                await self.runs.set_turns(conv.id, turns)
        return ConversationDetail(
            conv, thread.messages, can_resume, pending, asked, branches, decided_on(requests, thread.messages)
        )

    async def switch_branch(self, conversation: object, number: object, *, by: Principal = LOCAL) -> ConversationDetail:
        """Make branch `number` the active one (refused while a run is active), then the
        detail as `get` gives it."""
        conv = await self.summary(conversation, by=by)
        if self.branch_store is None:
            raise NotSupported("This store does not keep branches")
        if isinstance(number, bool) or not isinstance(number, int):
            raise BranchNotFound("activeBranch must be a branch number (an integer)")
        if await self.is_active(conv.id):
            raise SessionInProgress()
        asked = (await self.get(conv.id, by=by)).pending_approvals
        if asked:  # leaving would answer them "outcome unknown": a person decides first
            raise DecisionRequired(waiting_message(len(asked)))
        await self.branch_store.switch_branch(conv.id, number)
        return await self.get(conv.id, by=by)

    async def branch_messages(self, conversation: object, number: int, *, by: Principal = LOCAL) -> Sequence[Message]:
        """The messages of branch `number` of the conversation (BRANCH_NOT_FOUND if none)."""
        conv = await self.summary(conversation, by=by)
        found = await self.branch_store.branch_messages(conv.id, number) if self.branch_store else None
        if found is None:
            raise BranchNotFound(f"Branch {number} does not exist")
        return found

    async def transcript(self, conversation: object, *, by: Principal = LOCAL) -> Transcript:
        """What the Markdown export shows (entrypoints/export.py writes it)."""
        conv = await self.summary(conversation, by=by)
        messages = (await self.checkpoints.get_thread(conv.id)).messages
        view = latest_context(messages)
        branches = tuple(await self.branch_store.branches(conv.id)) if self.branch_store else ()
        active = next((b.number for b in branches if b.active), 1)
        where = (active, len(branches)) if len(branches) > 1 else None
        await self.audit.record(Action.EXPORT, conv.id, "markdown")
        return Transcript(conv, messages, view.sent_from if view else None, where)

    async def export_history(self, conversation: object, *, by: Principal = LOCAL) -> CheckpointHistory:
        """What the checkpoint JSONL export lists (entrypoints/export.py writes it)."""
        conv = await self.summary(conversation, by=by)
        await self.audit.record(Action.EXPORT, conv.id, "jsonl")
        history = await self.checkpoints.list_checkpoints(conv.id)
        if self.copies is None:  # the active branch's messages only
            messages = (await self.checkpoints.get_thread(conv.id)).messages
            active = (
                next((b.number for b in await self.branch_store.branches(conv.id) if b.active), 1) if self.branch_store else 1
            )
            return CheckpointHistory(conv, history, lambda n: messages if n == active else None)
        branches, active = await self.copies.read(conv.id)
        whole = ConversationCopy(conv.title, conv.created_at, conv.updated_at, branches, active)
        return CheckpointHistory(conv, history, lambda n: whole.content(n) if 1 <= n <= len(branches) else None)

    async def rename(self, conversation: object, title: object, *, by: Principal = LOCAL) -> Conversation:
        conv = await self.summary(conversation, by=by)
        if not await self.runs.rename_conversation(conv.id, clean_title(title), self.clock()):
            raise ConversationNotFound()
        return await self.summary(conv.id, by=by)

    async def fork(self, conversation: object, message_index: object, *, by: Principal = LOCAL) -> Conversation:
        """A new conversation that starts with this one's active branch up to message
        `message_index` (see domain.branches.fork_messages) and keeps its model and system
        prompt, written through the checkpoint store like any thread; the source is left as
        it is. The new row goes first: a crash in between leaves a visible conversation to
        delete, never an orphaned thread."""
        conv = await self.summary(conversation, by=by)
        if self.branch_store is None:
            raise NotSupported("This checkpoint store cannot fork conversations")
        thread = await self.checkpoints.get_thread(conv.id)
        messages = fork_messages(thread.messages, message_index)
        fork = await self.runs.create_conversation(
            new_id(),
            fork_title(conv.title),
            self.clock(),
            settings_of(conv),
            len(messages),
            owner=by.user_id,
            title_by=conv.title_by,
        )
        try:
            await self.branch_store.seed_thread(fork.id, messages, source=conv.id)
        except BaseException:
            await self.checkpoints.delete_thread(fork.id)
            await self.runs.delete_conversation(fork.id)
            raise
        await self.runs.set_turns(fork.id, count_turns(messages))
        return replace(fork, turns=count_turns(messages))

    async def configure(self, conversation: object, change: SettingsChange, *, by: Principal = LOCAL) -> Conversation:
        """Set the conversation's model and/or system prompt, for its next turn (a run in
        progress keeps what it started with). An unknown model is refused before anything
        is written."""
        conv = await self.summary(conversation, by=by)
        if change.sets_model and self.catalog is not None:
            await self.catalog().check(change.model)
        current = settings_of(conv)
        settings = change.apply(current)
        if settings != current and not await self.runs.set_chat_settings(conv.id, settings):
            raise ConversationNotFound()
        if settings != current:
            await self.audit.record(Action.SETTINGS_CHANGED, conv.id, changed_fields(current, settings))
        return await self.summary(conv.id, by=by)

    async def delete(self, conversation: object, *, by: Principal = LOCAL) -> bool:
        """Remove the conversation, its runs and every checkpoint of its thread; True once
        done. A temporary conversation with a run going is left instead (False): it is
        deleted when the run ends (services.after_runs); any other is SessionInProgress.

        The thread goes first: a crash in between leaves a visible, empty conversation to
        delete again, never invisible orphaned checkpoints."""
        conv = await self.summary(conversation, by=by)
        if await self.is_active(conv.id):
            if conv.temporary and await self.runs.leave_temporary(conv.id):
                return False
            raise SessionInProgress()
        await self.checkpoints.delete_thread(conv.id)
        await self.runs.delete_conversation(conv.id)
        await self.audit.record(Action.CONVERSATION_DELETED, conv.id, conv.title)
        return True

    async def organise(self, conversation: object, change: Organise, *, by: Principal = LOCAL) -> Conversation:
        """Pin or unpin, archive or unarchive the conversation (what `change` names)."""
        conv = await self.summary(conversation, by=by)
        if conv.temporary and not change.empty:
            raise InvalidInput("A temporary conversation is not kept: it cannot be pinned or archived")
        if not change.empty and not await self.runs.organise(conv.id, change):
            raise ConversationNotFound()
        return await self.summary(conv.id, by=by)
