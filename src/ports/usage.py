"""UsageStore: tokens and seconds per user, model and UTC day (issue 47 item 3)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import date
from typing import Protocol

from domain.traces import SpanEnd
from domain.usage import Cost, UsageRow


class UsageStore(Protocol):
    """One row per (user, model, day); `add` adds to it. Every method takes effect for all
    processes sharing the store as soon as it returns."""

    @abstractmethod
    async def add(self, user: str, model: str, day: date, cost: Cost, span: SpanEnd | None = None) -> None:
        """Add `cost` to the row of (`user`, `model`, `day`), making it if there is none: one
        transaction, so two processes adding at once both count. Not idempotent: the caller
        adds each call once. `span`: the call's trace span, ended in the same transaction as
        SpanStore.end would end it (a model call's end costs no write of its own)."""

    @abstractmethod
    async def rows(self, user: str | None, first: date, last: date) -> Sequence[UsageRow]:
        """The rows of days `first` to `last` (both included), by day, then user, then model;
        only `user`'s when given (None: everyone's). Only reads."""

    @abstractmethod
    async def tokens(self, user: str, day: date) -> int:
        """Tokens in and out of every model `user` used on `day`; 0 for none. Only reads."""
