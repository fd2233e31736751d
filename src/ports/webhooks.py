"""WebhookOutbox: the webhooks runs name, the deliveries their outcomes make, and each
user's signing secret, shared by every process on the store (domain.webhooks).

A delivery is written by `RunRepository.finish_run`, in the transaction that records the
run's outcome, when the run has a webhook (`attach_webhook`, or a `webhook` in its run
kwargs): a crash leaves both the outcome and its delivery or neither, and its id is made
once. Deliveries are then claimed, called and settled by any live process; a claim whose
process died is taken again once its lease ran out, with the same id (a receiver may see
an id more than once, never two ids for one outcome)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from domain.webhooks import Delivery, IpAddress, WebhookTarget


class WebhookOutbox(Protocol):
    @abstractmethod
    async def attach_webhook(self, run_id: str, conversation_id: str, url: str) -> None:
        """Name `url` as the webhook of the run `run_id` (or of the queued message whose run
        takes its id), before that run's row is inserted; replaces one named before."""

    @abstractmethod
    async def run_webhook(self, run_id: str) -> str | None:
        """The webhook the run names (attached, or its run kwargs' `webhook`); None: none."""

    @abstractmethod
    async def webhook_secret(self, owner: str, new: str) -> str:
        """The user's signing secret; `new` is stored and returned when they have none
        (atomically: two callers get the same secret)."""

    @abstractmethod
    async def claim_deliveries(self, now: datetime, lease: float, limit: int) -> Sequence[Delivery]:
        """At most `limit` deliveries due at `now` (pending, their next attempt at or before
        `now`, and not claimed, or their claim older than `lease` seconds), oldest first,
        each claimed for this caller: its `attempts` counted up by one. Two callers never
        claim one delivery at once (PostgreSQL: SKIP LOCKED; SQLite: the single writer)."""

    @abstractmethod
    async def settle_delivery(self, delivery: Delivery, next_at: datetime | None, error: str | None) -> bool:
        """After an attempt of a claimed delivery: `error` None, it was delivered; else it
        failed, and is tried again at `next_at` (None: given up). False, changing nothing,
        when the delivery was claimed again since (its `attempts` moved on)."""

    @abstractmethod
    async def deliveries(self, run_id: str) -> Sequence[tuple[Delivery, str]]:
        """The run's deliveries with their state (pending, delivered, failed). Only reads."""


class AddressResolver(Protocol):
    """A host name's addresses (the system resolver)."""

    @abstractmethod
    async def resolve(self, host: str, port: int) -> Sequence[IpAddress]:
        """Every address the name resolves to; empty when it resolves to none."""


class WebhookSender(Protocol):
    @abstractmethod
    async def send(self, target: WebhookTarget, address: IpAddress, body: bytes, headers: dict[str, str]) -> str | None:
        """POST `body` to the target, connecting to `address` (one checked), within the
        sender's bounds (time, response size, no redirect followed); None when the receiver
        answered 2xx, else why the attempt failed."""
