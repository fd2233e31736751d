"""WebhookOutbox on the SQLite file, on the run store's writer and reader. A delivery is
inserted by `record_delivery` in the transaction that records its run's outcome; a claim
is one UPDATE on the file's single writer, so two processes never claim one delivery."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from adapters.sqlite.database import Worker, transaction, unsynced
from adapters.sqlite.rows import fetchall
from adapters.storage.webhook_rows import outcome_body
from domain.model import iso, new_id
from domain.webhooks import Delivery
from ports.runs import RunFinish
from ports.webhooks import WebhookOutbox

DELIVERY = "id, owner, url, body, created_at, attempts, run_id"


def _delivery(row: Sequence[Any]) -> Delivery:
    did, owner, url, body, created, attempts, run_id = row
    return Delivery(did, owner, url, body, datetime.fromisoformat(created), attempts, run_id)


def webhook_of(c: sqlite3.Connection, run_id: str) -> str | None:
    """The run's webhook: the one attached to it, else its run kwargs' `webhook`."""
    row = c.execute("SELECT url FROM run_webhooks WHERE run_id = ?", (run_id,)).fetchone()
    if row is not None:
        return str(row[0])
    row = c.execute("SELECT kwargs FROM run_kwargs WHERE run_id = ?", (run_id,)).fetchone()
    url = json.loads(row[0]).get("webhook") if row is not None else None
    return url if isinstance(url, str) and url else None


def record_delivery(c: sqlite3.Connection, run_id: str, conversation_id: str, finish: RunFinish) -> None:
    """In the outcome's transaction: the run's webhook delivery, when it names a webhook."""
    url = webhook_of(c, run_id)
    if url is None:
        return
    owner = c.execute("SELECT owner FROM conversations WHERE id = ?", (conversation_id,)).fetchone()[0]
    fired = c.execute("SELECT scheduled_for FROM schedule_firings WHERE run_id = ?", (run_id,)).fetchone()
    scheduled = datetime.fromisoformat(fired[0]) if fired else None
    did = new_id()
    body = outcome_body(did, run_id, conversation_id, finish.status, finish.error, scheduled, finish.now)
    c.execute(
        "INSERT INTO webhook_deliveries (id, run_id, owner, url, body, next_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (run_id) DO NOTHING",
        (did, run_id, owner, url, body, iso(finish.now), iso(finish.now)),
    )


class SqliteWebhooks(WebhookOutbox):
    _writer: Worker
    _reader: Worker

    async def attach_webhook(self, run_id: str, conversation_id: str, url: str) -> None:
        def write(c: sqlite3.Connection) -> None:
            # unsynced: the run's (or the queued message's) synced insert follows, and WAL
            # frames are ordered, so nothing acknowledged goes without it
            with unsynced(c), transaction(c):
                c.execute(
                    "INSERT INTO run_webhooks (run_id, conversation_id, url) VALUES (?, ?, ?) "
                    "ON CONFLICT (run_id) DO UPDATE SET url = excluded.url",
                    (run_id, conversation_id, url),
                )

        await self._writer.run(write)

    async def run_webhook(self, run_id: str) -> str | None:
        return await self._reader.run(webhook_of, run_id)

    async def webhook_secret(self, owner: str, new: str) -> str:
        def write(c: sqlite3.Connection) -> str:
            with transaction(c):
                c.execute(
                    "INSERT INTO webhook_secrets (owner, secret) VALUES (?, ?) ON CONFLICT (owner) DO NOTHING", (owner, new)
                )
                return str(c.execute("SELECT secret FROM webhook_secrets WHERE owner = ?", (owner,)).fetchone()[0])

        return await self._writer.run(write)

    async def claim_deliveries(self, now: datetime, lease: float, limit: int) -> Sequence[Delivery]:
        stale = iso(now - timedelta(seconds=lease))

        def write(c: sqlite3.Connection) -> list[Delivery]:
            with transaction(c):
                rows = c.execute(
                    "UPDATE webhook_deliveries SET attempts = attempts + 1, claimed_at = ? WHERE id IN ("
                    "SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_at <= ? "
                    "AND (claimed_at IS NULL OR claimed_at <= ?) ORDER BY next_at, created_at LIMIT ?) "
                    f"RETURNING {DELIVERY}",
                    (iso(now), iso(now), stale, limit),
                ).fetchall()
            return sorted((_delivery(r) for r in rows), key=lambda d: d.created_at)

        return await self._writer.run(write)

    async def settle_delivery(self, delivery: Delivery, next_at: datetime | None, error: str | None) -> bool:
        state = "delivered" if error is None else ("pending" if next_at is not None else "failed")
        when = iso(next_at) if next_at is not None else None

        def write(c: sqlite3.Connection) -> bool:
            with transaction(c):
                return (
                    c.execute(
                        "UPDATE webhook_deliveries SET state = ?, next_at = coalesce(?, next_at), claimed_at = NULL, "
                        "last_error = ? WHERE id = ? AND attempts = ? AND state = 'pending'",
                        (state, when, error, delivery.id, delivery.attempts),
                    ).rowcount
                    > 0
                )

        return await self._writer.run(write)

    async def deliveries(self, run_id: str) -> Sequence[tuple[Delivery, str]]:
        rows = await self._reader.run(
            fetchall, f"SELECT {DELIVERY}, state FROM webhook_deliveries WHERE run_id = ? ORDER BY created_at", (run_id,)
        )
        return [(_delivery(r[:-1]), str(r[-1])) for r in rows]
