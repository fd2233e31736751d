"""Outcomes this process decided and the store refused to write (a full disk, a database
turned read-only): the run's own outcome, or a reclaimer's verdict on a run whose lease ran
out. The store keeps saying `running` until a retry gets through, so reads show the held
outcome instead, marked unsaved: a run whose outcome cannot be written reads as ended
(`failed STORAGE_FAILURE`, say) at once in its own process and, once its lease is out and
a reclaim was refused, in the others; never as `running` until space is back."""

from __future__ import annotations

from dataclasses import dataclass, replace

from domain.errors import ErrorCode
from domain.model import Conversation, RunError, RunStatus

UNSAVED = "not saved yet: it is recorded once the database takes writes again"


@dataclass(frozen=True)
class Unsaved:
    run_id: str
    status: RunStatus
    error: RunError | None


class UnsavedOutcomes:
    """What this process holds unwritten, by conversation (a conversation whose run is
    `running` in the store starts no other run, so one entry each suffices)."""

    def __init__(self) -> None:
        self._held: dict[str, Unsaved] = {}

    def keep(self, conversation_id: str, run_id: str, status: RunStatus, error: RunError | None) -> None:
        self._held[conversation_id] = Unsaved(run_id, status, error)

    def drop(self, conversation_id: str, run_id: str) -> None:
        """Forget the outcome of `run_id` (written now, or the conversation moved on)."""
        if (held := self._held.get(conversation_id)) is not None and held.run_id == run_id:
            del self._held[conversation_id]

    def held(self, conversation: Conversation) -> Unsaved | None:
        """The outcome held for the conversation's latest run, when the store still says
        it is `running` (the caller checks that the run is the one held)."""
        return self._held.get(conversation.id) if conversation.status is RunStatus.RUNNING else None


def shown(conversation: Conversation, held: Unsaved) -> Conversation:
    """The conversation as reads show it while `held` is unwritten."""
    if held.error is not None:
        error = RunError(held.error.code, f"{held.error.message} ({UNSAVED})")
    else:  # an outcome without an error of its own: the storage is what is wrong
        error = RunError(ErrorCode.STORAGE_FAILURE.value, f"The run ended {held.status.value} ({UNSAVED})")
    return replace(conversation, status=held.status, error=error)
