"""RunRepository: the application's own records, conversations and runs."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from domain.model import Conversation, Run, RunError, RunStatus


class RunRepository(Protocol):
    """Conversations and the runs executed on them.

    Timestamps are given by the caller. "Latest run" is the run with the greatest
    `started_at`, ties broken by insertion order. Every method is atomic.
    """

    @abstractmethod
    def create_conversation(self, conversation_id: str, title: str, now: datetime) -> Conversation:
        """Insert a conversation with message_count 0 and created_at = updated_at = now."""

    @abstractmethod
    def get_conversation(self, conversation_id: str) -> Conversation | None:
        """The conversation with its latest run's status and error, or None if unknown."""

    @abstractmethod
    def list_conversations(
        self, limit: int | None = None, before: tuple[datetime, str] | None = None
    ) -> Sequence[Conversation]:
        """Conversations by updated_at descending (then id descending).

        `before` is a (updated_at, id) cursor: only conversations strictly after it in that
        order are returned. `limit` None means all.
        """

    @abstractmethod
    def rename_conversation(self, conversation_id: str, title: str, now: datetime) -> bool:
        """Set the title and bump updated_at; False if the conversation is unknown."""

    @abstractmethod
    def delete_conversation(self, conversation_id: str) -> bool:
        """Delete the conversation and its runs; False if unknown.

        Raises SessionInProgress if a run of it is `running`.
        """

    @abstractmethod
    def start_run(self, run: Run, now: datetime) -> None:
        """Insert `run` (status running) and bump the conversation's updated_at, atomically.

        At most one run per conversation may be running, across every process sharing the
        store: raises SessionInProgress if one is.
        """

    @abstractmethod
    def finish_run(
        self,
        run_id: str,
        status: RunStatus,
        message_count: int | None,
        error: RunError | None,
        now: datetime,
    ) -> bool:
        """Record the outcome of a run that is still `running`, atomically with the
        conversation's message_count (unless None) and updated_at.

        Returns False, changing nothing, when the run is unknown or already finished.
        """

    @abstractmethod
    def get_run(self, run_id: str) -> Run | None:
        """The run, or None."""

    @abstractmethod
    def latest_run(self, conversation_id: str) -> Run | None:
        """The conversation's latest run, or None if it never had one."""

    @abstractmethod
    def running_runs(self) -> Sequence[Run]:
        """Every run whose status is `running`, oldest first."""

    @abstractmethod
    def heartbeat(self, run_ids: Sequence[str], now: datetime) -> None:
        """Set heartbeat_at = now on those runs that are still running."""
