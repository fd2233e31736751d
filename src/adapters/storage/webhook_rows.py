"""A webhook delivery's body, as every store writes it in the transaction that records a run's
outcome (ports.webhooks)."""

from __future__ import annotations

import json
from datetime import datetime

from domain.model import RunError, RunStatus, iso


def outcome_body(
    delivery_id: str,
    run_id: str,
    conversation_id: str,
    status: RunStatus,
    error: RunError | None,
    scheduled_for: datetime | None,
    ended_at: datetime,
) -> str:
    """The JSON a webhook receives when a run's outcome is recorded."""
    return json.dumps(
        {
            "event": "run.ended",
            "deliveryId": delivery_id,
            "runId": run_id,
            "conversationId": conversation_id,
            "threadId": conversation_id,
            "status": status.value,
            "error": {"code": error.code, "message": error.message} if error is not None else None,
            "scheduledFor": iso(scheduled_for) if scheduled_for is not None else None,
            "endedAt": iso(ended_at),
        },
        separators=(",", ":"),
    )
