"""RunRepository: the application's own records, conversations and runs, and the run
lifecycle's durable half (ownership, leases, outcomes)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from domain import lifecycle
from domain.events import StreamEvent
from domain.model import Conversation, Run, RunError, RunOwner, RunStatus, TitleSource
from domain.models import ChatSettings
from domain.organise import Organise, Shown
from domain.principals import BOOTSTRAP_ID
from domain.queue import QueuedMessage
from domain.schedules import FiringClaim
from ports.events import EventBatch


@dataclass(frozen=True)
class RunFinish:
    """The outcome of a run, as one write.

    `event` is the run's terminal stream event (`end` or `chat-error`); it is appended to
    the run's events in the same transaction, with id `event_id` or, when None (or not
    above the last stored id), the last stored id + 1. `events` are the run's events not
    yet in its log, written first in the same transaction (ids already stored are kept).

    `then`: when the outcome is `completed` and the conversation has a waiting queued
    message, the store inserts this run (running, owned as given; with the message's id,
    as `MessageQueue.start_queued` says) and the message is claimed by it, in the same
    transaction (ports.queue). `input_recorded`: whether the
    run's own message reached the thread; when False, a queued message the run was
    started for goes back to the head of the queue, when True it is deleted."""

    status: RunStatus
    now: datetime
    error: RunError | None = None
    message_count: int | None = None
    event: StreamEvent | None = None
    event_id: int | None = None
    events: EventBatch = ()
    then: Run | None = None
    input_recorded: bool = True

    @property
    def transition(self) -> lifecycle.Transition:
        """Leaving `running` for `status`: InvalidTransition unless the lifecycle allows it."""
        return lifecycle.finishing(self.status)


@dataclass(frozen=True)
class LoadCap:
    """USER_MAX_ACTIVE_RUNS as a condition of a run's insert: the user `owner` may have
    fewer than `limit` runs running plus messages queued (`owner_load`) when it is made."""

    owner: str
    limit: int


class RunRepository(Protocol):
    """Conversations and the runs executed on them, shared by every process on the store.

    Every method is atomic and never blocks the event loop. Display timestamps (`now`)
    are given by the caller; lease times come from the store's own clock, so processes
    with skewed clocks agree. "Latest run" is the run with the greatest `started_at`, ties
    broken by insertion order. A store that cannot be read or written raises
    StorageFailure.
    """

    @abstractmethod
    async def create_conversation(
        self,
        conversation_id: str,
        title: str,
        now: datetime,
        settings: ChatSettings = ChatSettings(),  # noqa: B008
        message_count: int = 0,
        owner: str = BOOTSTRAP_ID,
        title_by: TitleSource = TitleSource.MESSAGE,
        temporary: bool = False,
    ) -> Conversation:
        """Insert a conversation with `message_count` (0 unless it starts with a copied
        thread: a fork), created_at = updated_at = now, the model, system prompt and system
        mode of `settings` (None: the server's default), belonging to the user `owner`,
        its title given by `title_by`; `temporary`: never listed (domain.organise)."""

    @abstractmethod
    async def set_chat_settings(self, conversation_id: str, settings: ChatSettings) -> bool:
        """Set the conversation's model, system prompt and system mode (all, as given: None
        is the server's default); updated_at is left as it is. False if the conversation is
        unknown."""

    @abstractmethod
    async def get_conversation(self, conversation_id: str) -> Conversation | None:
        """The conversation with its latest run's status and error, or None if unknown."""

    @abstractmethod
    async def list_conversations(
        self,
        limit: int | None = None,
        before: tuple[datetime, str] | None = None,
        query: str = "",
        owner: str | None = None,
        shown: Shown = Shown(),  # noqa: B008 - a frozen value
    ) -> Sequence[Conversation]:
        """Conversations by updated_at descending (then id descending); never a temporary one.

        `before` is a (updated_at, id) cursor: only conversations strictly after it in that
        order are returned. `limit` None means all. A non-empty `query` keeps only the
        conversations whose title contains it, compared case-folded (`str.casefold`).
        `owner` keeps only that user's conversations (None: everyone's). `shown` keeps the
        pinned or archived ones it names (the default: every kept conversation).
        """

    @abstractmethod
    async def owner_load(self, owner: str) -> int:
        """How many runs of the user `owner`'s conversations are running, plus how many of
        their messages wait in queues (USER_MAX_ACTIVE_RUNS). Only reads."""

    @abstractmethod
    async def give_conversations(self, from_owner: str, to_owner: str) -> int:
        """Make every conversation of the user `from_owner` the user `to_owner`'s (with all
        that is theirs: runs, queue, search entries, files) and their schedules, atomically;
        how many conversations there were.
        Idempotent: a second call finds none."""

    @abstractmethod
    async def find_conversations(self, id_prefix: str, limit: int, owner: str | None = None) -> Sequence[Conversation]:
        """At most `limit` conversations whose id starts with `id_prefix` (lower-case hex
        and dashes, as ids are stored), most recently updated first; only `owner`'s when given."""

    @abstractmethod
    async def restore_conversation(self, conversation_id: str, message_count: int, updated_at: datetime) -> bool:
        """Set the message count and last update of a conversation written whole (an
        import); False if the conversation is unknown."""

    @abstractmethod
    async def rename_conversation(self, conversation_id: str, title: str, now: datetime) -> bool:
        """Set a person's title (title_by USER) and bump updated_at; False if the
        conversation is unknown."""

    @abstractmethod
    async def retitle(self, conversation_id: str, title: str, source: TitleSource) -> bool:
        """Set a title not given by a person (`source` MODEL or MESSAGE) if, in the same
        statement, the conversation's title is still a MESSAGE one: a person's title is
        never replaced, whenever they gave it. updated_at is left as it is. False when the
        conversation is unknown or its title was not replaced."""

    @abstractmethod
    async def organise(self, conversation_id: str, change: Organise) -> bool:
        """Pin or unpin, archive or unarchive (the fields `change` names); updated_at is left
        as it is. False if the conversation is unknown."""

    @abstractmethod
    async def set_turns(self, conversation_id: str, turns: int) -> bool:
        """Record how many turns (user messages) the conversation's active branch holds;
        updated_at is left as it is. False if the conversation is unknown."""

    @abstractmethod
    async def leave_temporary(self, conversation_id: str) -> bool:
        """Mark a temporary conversation as left by its page: `abandoned` names it from now
        on. False when it is unknown or not temporary."""

    @abstractmethod
    async def abandoned(self, idle_since: datetime) -> Sequence[str]:
        """The temporary conversations that were left, or not updated since `idle_since`,
        and have no running run: what may be deleted now. Only reads."""

    @abstractmethod
    async def temporary_among(self, conversation_ids: Sequence[str]) -> set[str]:
        """Those of the conversations that are temporary (unknown ids are not). Only reads."""

    @abstractmethod
    async def delete_conversation(self, conversation_id: str) -> bool:
        """Delete the conversation, its runs, their events, its journal and its queue;
        False if unknown.

        Raises SessionInProgress if a run of it is `running`.
        """

    @abstractmethod
    async def start_run(
        self,
        run: Run,
        now: datetime,
        flushed_by_input: bool = False,
        cap: LoadCap | None = None,
        firing: FiringClaim | None = None,
    ) -> None:
        """Insert `run` (status running, heartbeat = the store's now) and bump the
        conversation's updated_at to `now`, atomically.

        At most one run per conversation may be running, across every process sharing the
        store: raises SessionInProgress if one is.

        `cap`: raises UserLimitReached, inserting nothing, when `owner_load(cap.owner)` is
        `cap.limit` or more. The load is read in the insert's own transaction, serialised
        with every other capped insert for that user on every process, so a burst of
        starts never takes a user past the limit.

        `firing`: a schedule's firing claimed in the same transaction (ports.schedules):
        FiringTaken, inserting nothing, when another process took it or the schedule changed.

        `flushed_by_input`: the caller commits the run's input to this same store, flushed
        to disk, before it acknowledges anything; a store whose commits are ordered (a WAL)
        may then commit this one without flushing, the input's flush covering it.
        """

    @abstractmethod
    async def finish_run(
        self,
        run_id: str,
        finish: RunFinish,
        owner: RunOwner | None = None,
        heartbeat: datetime | None = None,
    ) -> bool | QueuedMessage:
        """Record the outcome of a run that is still `running`, atomically with the
        conversation's message_count (unless None) and updated_at, and the terminal event.
        The store applies `finish.transition` (raising InvalidTransition, changing
        nothing, when the lifecycle does not allow it) as a compare-and-set on the status.

        Fencing: with `owner`, only if the run is still owned by that instance; with
        `heartbeat` (a reclaimer's compare-and-set), only if the run's heartbeat is still
        the one the reclaimer read (its owner did not renew meanwhile). Returns False,
        changing nothing, when the run is unknown, finished, or the guard fails.
        `finish.then` and `finish.input_recorded` act on the queue in the same
        transaction (see RunFinish), and `input_recorded` False hands a schedule's firing
        the run was started for back (ports.schedules: `redo`); when `then` was started, the answer is the queued
        message it took (truthy, like True; its `run_id` the started run's id), so the
        caller needs no second read.
        """

    @abstractmethod
    async def give_up(self, run_id: str, error: RunError, now: datetime) -> bool:
        """Apply lifecycle.GIVE_UP (`interrupted` to `failed`) with `error`: automatic
        resumes gave up. False, changing nothing, unless the run is interrupted."""

    @abstractmethod
    async def get_run(self, run_id: str) -> Run | None:
        """The run, or None."""

    @abstractmethod
    async def latest_run(self, conversation_id: str, lease_seconds: float = 0.0) -> Run | None:
        """The conversation's latest run, or None if it never had one. With a positive
        `lease_seconds`, `lease_expired` tells whether a running run's heartbeat is older
        than that by the store's clock."""

    async def conversation_and_latest_run(
        self, conversation_id: str, lease_seconds: float = 0.0
    ) -> tuple[Conversation | None, Run | None]:
        """`get_conversation` and `latest_run` together, as a new message needs them (a
        store may answer both in one round trip)."""
        return await self.get_conversation(conversation_id), await self.latest_run(conversation_id, lease_seconds)

    @abstractmethod
    async def thread_metadata(self, conversation_ids: Sequence[str]) -> Mapping[str, Mapping[str, Any]]:
        """The metadata stored for those of `conversation_ids` that have some (LangGraph's
        thread metadata: a JSON object); a conversation without any is left out."""

    @abstractmethod
    async def merge_thread_metadata(self, conversation_id: str, metadata: Mapping[str, Any]) -> bool:
        """Merge `metadata` (a JSON-encodable object) into the conversation's, key by key
        (a given key replaces the stored one), atomically; False, changing nothing, if the
        conversation is unknown. The metadata goes with the conversation when it is deleted."""

    @abstractmethod
    async def run_kwargs(self, conversation_id: str, run_id: str, owner: str | None = None) -> Mapping[str, Any] | None:
        """What `set_run_kwargs` stored with run `run_id` of the conversation (LangGraph's
        run kwargs: a JSON object, its stream modes), None when nothing was (or the
        conversation is not `owner`'s, when given). Only reads."""

    @abstractmethod
    async def set_run_kwargs(
        self, conversation_id: str, run_id: str, kwargs: Mapping[str, Any], owner: str | None = None
    ) -> bool:
        """Store `kwargs` (a JSON-encodable object) with the run `run_id` of the conversation,
        replacing what was stored; False, storing nothing, if the conversation is unknown
        (or not `owner`'s, when given: one statement, no read before it).
        `run_id` need not name a run yet: a queued message's run takes the message's id when
        it starts. The kwargs go with the conversation when it is deleted."""

    @abstractmethod
    async def recent_runs(self, conversation_id: str, limit: int) -> Sequence[Run]:
        """The conversation's latest `limit` runs, newest first."""

    @abstractmethod
    async def running_runs(self, lease_seconds: float = 0.0) -> Sequence[Run]:
        """Every run whose status is `running`, oldest first (`lease_expired` as above)."""

    @abstractmethod
    async def interrupted_conversations(self) -> Sequence[Run]:
        """The latest run of every conversation whose latest run is `interrupted`."""

    @abstractmethod
    async def renew(self, owner: RunOwner, run_ids: Sequence[str]) -> set[str]:
        """Set heartbeat = the store's now on those runs that are still running and owned
        by `owner`; return the ids renewed (the others are no longer this owner's)."""
