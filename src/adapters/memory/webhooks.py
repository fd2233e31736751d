"""WebhookOutbox in memory: dicts behind the run store's lock, so a delivery is recorded in
the same step as its run's outcome (`_record_delivery`), as in the durable stores."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from adapters.storage.webhook_rows import outcome_body
from domain.model import Conversation, new_id
from domain.schedules import Firing
from domain.webhooks import Delivery
from ports.runs import RunFinish
from ports.webhooks import WebhookOutbox


@dataclass(frozen=True)
class _Row:
    delivery: Delivery
    state: str = "pending"
    next_at: datetime | None = None
    claimed_at: datetime | None = None


class InMemoryWebhooks(WebhookOutbox):
    _lock: threading.Lock
    _conversations: dict[str, Conversation]
    _run_kwargs: dict[str, tuple[str, str]]
    _firings: dict[tuple[str, datetime], Firing]

    def _webhooks_init(self) -> None:
        self._hooks: dict[str, tuple[str, str]] = {}  # run -> (conversation, url)
        self._secrets: dict[str, str] = {}
        self._outbox: dict[str, _Row] = {}  # delivery id -> row, in insertion order

    def _forget_webhooks(self, conversation_id: str) -> None:
        for rid in [r for r, (cid, _) in self._hooks.items() if cid == conversation_id]:
            del self._hooks[rid]

    def _webhook_of(self, run_id: str) -> str | None:
        hook = self._hooks.get(run_id)
        if hook is not None:
            return hook[1]
        named = json.loads(self._run_kwargs[run_id][1]).get("webhook") if run_id in self._run_kwargs else None
        return named if isinstance(named, str) and named else None

    def _record_delivery(self, run_id: str, conversation_id: str, finish: RunFinish) -> None:
        """Under the lock, with the outcome: the run's delivery, when it names a webhook."""
        url = self._webhook_of(run_id)
        if url is None or any(r.delivery.run_id == run_id for r in self._outbox.values()):
            return
        scheduled = next((f.scheduled_for for f in self._firings.values() if f.run_id == run_id), None)
        did = new_id()
        body = outcome_body(did, run_id, conversation_id, finish.status, finish.error, scheduled, finish.now)
        owner = self._conversations[conversation_id].owner
        self._outbox[did] = _Row(Delivery(did, owner, url, body, finish.now, 0, run_id), next_at=finish.now)

    async def attach_webhook(self, run_id: str, conversation_id: str, url: str) -> None:
        with self._lock:
            self._hooks[run_id] = (conversation_id, url)

    async def run_webhook(self, run_id: str) -> str | None:
        with self._lock:
            return self._webhook_of(run_id)

    async def webhook_secret(self, owner: str, new: str) -> str:
        with self._lock:
            return self._secrets.setdefault(owner, new)

    async def claim_deliveries(self, now: datetime, lease: float, limit: int) -> Sequence[Delivery]:
        stale = now - timedelta(seconds=lease)
        claimed: list[Delivery] = []
        with self._lock:
            due = [
                r
                for r in self._outbox.values()
                if r.state == "pending"
                and r.next_at is not None
                and r.next_at <= now
                and (r.claimed_at is None or r.claimed_at <= stale)
            ]
            for row in sorted(due, key=lambda r: r.next_at or now)[:limit]:
                taken = replace(row.delivery, attempts=row.delivery.attempts + 1)
                self._outbox[taken.id] = replace(row, delivery=taken, claimed_at=now)
                claimed.append(taken)
        return sorted(claimed, key=lambda d: d.created_at)

    async def settle_delivery(self, delivery: Delivery, next_at: datetime | None, error: str | None) -> bool:
        state = "delivered" if error is None else ("pending" if next_at is not None else "failed")
        with self._lock:
            row = self._outbox.get(delivery.id)
            if row is None or row.state != "pending" or row.delivery.attempts != delivery.attempts:
                return False
            self._outbox[delivery.id] = replace(row, state=state, next_at=next_at or row.next_at, claimed_at=None)
            return True

    async def deliveries(self, run_id: str) -> Sequence[tuple[Delivery, str]]:
        with self._lock:
            return [(r.delivery, r.state) for r in self._outbox.values() if r.delivery.run_id == run_id]
