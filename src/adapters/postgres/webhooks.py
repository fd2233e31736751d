"""WebhookOutbox on PostgreSQL, on the run store's pool. A delivery is inserted by
`record_delivery` in the transaction that records its run's outcome; a claim takes its rows
with FOR UPDATE SKIP LOCKED, so two processes never claim one delivery and neither waits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from psycopg import AsyncCursor

from adapters.postgres.database import PostgresDatabase
from adapters.storage.webhook_rows import outcome_body
from domain.model import new_id
from domain.webhooks import Delivery
from ports.runs import RunFinish
from ports.webhooks import WebhookOutbox

DELIVERY = "id, owner, url, body, created_at, attempts, run_id"


def _delivery(row: Sequence[Any]) -> Delivery:
    did, owner, url, body, created, attempts, run_id = row
    return Delivery(did, owner, url, body, created, attempts, run_id)


async def record_delivery(cur: AsyncCursor[Any], run_id: str, conversation_id: str, finish: RunFinish) -> None:
    """In the outcome's transaction: the run's webhook delivery, when it names a webhook
    (the one attached to it, else its run kwargs' `webhook`)."""
    await cur.execute(
        "SELECT coalesce((SELECT url FROM run_webhooks WHERE run_id = %(r)s), "
        "(SELECT kwargs->>'webhook' FROM run_kwargs WHERE run_id = %(r)s)), "
        "(SELECT owner FROM conversations WHERE id = %(c)s), "
        "(SELECT scheduled_for FROM schedule_firings WHERE run_id = %(r)s LIMIT 1)",
        {"r": run_id, "c": conversation_id},
    )
    row = await cur.fetchone()
    if row is None or not row[0]:
        return
    url, owner, scheduled = row
    did = new_id()
    body = outcome_body(did, run_id, conversation_id, finish.status, finish.error, scheduled, finish.now)
    await cur.execute(
        "INSERT INTO webhook_deliveries (id, run_id, owner, url, body, next_at, created_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (run_id) DO NOTHING",
        (did, run_id, owner, url, body, finish.now, finish.now),
    )


class PostgresWebhooks(WebhookOutbox):
    db: PostgresDatabase

    async def _rows(self, sql: str, args: Sequence[object] | Mapping[str, object] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    async def attach_webhook(self, run_id: str, conversation_id: str, url: str) -> None:
        await self._rows(
            "INSERT INTO run_webhooks (run_id, conversation_id, url) VALUES (%s, %s, %s) "
            "ON CONFLICT (run_id) DO UPDATE SET url = excluded.url RETURNING run_id",
            (run_id, conversation_id, url),
        )

    async def run_webhook(self, run_id: str) -> str | None:
        rows = await self._rows(
            "SELECT coalesce((SELECT url FROM run_webhooks WHERE run_id = %(r)s), "
            "(SELECT kwargs->>'webhook' FROM run_kwargs WHERE run_id = %(r)s))",
            {"r": run_id},
        )
        return rows[0][0] if rows and rows[0][0] else None

    async def webhook_secret(self, owner: str, new: str) -> str:
        rows = await self._rows(
            "WITH made AS (INSERT INTO webhook_secrets (owner, secret) VALUES (%(o)s, %(s)s) "
            "ON CONFLICT (owner) DO NOTHING RETURNING secret) "
            "SELECT secret FROM made UNION ALL SELECT secret FROM webhook_secrets WHERE owner = %(o)s",
            {"o": owner, "s": new},
        )
        return str(rows[0][0])

    async def claim_deliveries(self, now: datetime, lease: float, limit: int) -> Sequence[Delivery]:
        rows = await self._rows(
            "UPDATE webhook_deliveries SET attempts = attempts + 1, claimed_at = %(now)s WHERE id IN ("
            "SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_at <= %(now)s "
            "AND (claimed_at IS NULL OR claimed_at <= %(stale)s) ORDER BY next_at, created_at LIMIT %(limit)s "
            f"FOR UPDATE SKIP LOCKED) RETURNING {DELIVERY}",
            {"now": now, "stale": now - timedelta(seconds=lease), "limit": limit},
        )
        return sorted((_delivery(r) for r in rows), key=lambda d: d.created_at)

    async def settle_delivery(self, delivery: Delivery, next_at: datetime | None, error: str | None) -> bool:
        state = "delivered" if error is None else ("pending" if next_at is not None else "failed")
        rows = await self._rows(
            "UPDATE webhook_deliveries SET state = %s, next_at = coalesce(%s, next_at), claimed_at = NULL, last_error = %s "
            "WHERE id = %s AND attempts = %s AND state = 'pending' RETURNING id",
            (state, next_at, error, delivery.id, delivery.attempts),
        )
        return bool(rows)

    async def deliveries(self, run_id: str) -> Sequence[tuple[Delivery, str]]:
        rows = await self._rows(
            f"SELECT {DELIVERY}, state FROM webhook_deliveries WHERE run_id = %s ORDER BY created_at", (run_id,)
        )
        return [(_delivery(r[:-1]), str(r[-1])) for r in rows]
