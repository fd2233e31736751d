"""AssistantStore: the assistants of hosted graphs and their versions (domain.assistants),
shared by every process on the store."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from domain.assistants import Assistant, AssistantPatch


class AssistantStore(Protocol):
    """Every method is atomic and takes effect for every process as soon as it returns.

    Reads take a `viewer`: a user id sees their own assistants and the start-up ones (owner
    None); None sees every one. Writes take the `owner` the caller found the assistant with
    (None: a start-up one) and touch it only while it is still that owner's: another user's
    assistant, or one deleted meanwhile, answers as unknown (None, False)."""

    @abstractmethod
    async def create(self, assistant: Assistant, limit: int) -> None:
        """Insert `assistant` and its version 1. AssistantExists when its id is taken,
        whoever holds it (nothing stored); TooManyAssistants when its owner has `limit`
        assistants already (a start-up one, owner None, is never refused so)."""

    @abstractmethod
    async def get(self, assistant_id: str, viewer: str | None) -> Assistant | None:
        """The assistant (its latest version), or None when unknown or not `viewer`'s to see."""

    @abstractmethod
    async def assistants(self, viewer: str | None, graph_ids: Sequence[str]) -> Sequence[Assistant]:
        """Every assistant `viewer` sees whose graph is one of `graph_ids`, in no order."""

    @abstractmethod
    async def update(
        self, assistant_id: str, owner: str | None, patch: AssistantPatch, now: datetime, limit: int
    ) -> Assistant | None:
        """Apply `patch` as a new version (the highest so far plus one), which becomes the
        latest; the assistant as it is now. None when unknown (or not `owner`'s);
        TooManyAssistants when it has `limit` versions already (nothing stored)."""

    @abstractmethod
    async def delete(self, assistant_id: str, owner: str | None) -> bool:
        """Delete the assistant and every version of it; False when unknown (or not `owner`'s)."""

    @abstractmethod
    async def versions(self, assistant_id: str, viewer: str | None) -> Sequence[Assistant]:
        """Every version of the assistant, newest first (each with its own `created_at` as
        both times); empty when unknown or not `viewer`'s to see."""

    @abstractmethod
    async def set_latest(self, assistant_id: str, owner: str | None, version: int, now: datetime) -> Assistant | None:
        """Make `version` the latest (its graph, config, context, metadata, name and
        description become the assistant's; `updated_at` is `now`); the assistant as it is
        now. None when the assistant (or that version of it) is unknown, or not `owner`'s."""
