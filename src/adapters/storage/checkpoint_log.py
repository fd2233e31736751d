"""The rows every saver reads back from its checkpoint log, mapped to the port's values
(ports.saver): one mapping for SQLite and PostgreSQL, whose log tables have the same
columns."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from adapters.storage import message_log
from domain.model import CheckpointSummary
from ports.saver import StoredHead

HEAD_COLUMNS = "checkpoint_id, next, message_count, run_id, writes, pending_input"
HISTORY_COLUMNS = "checkpoint_id, created_at, step, source, next, message_count, last_message, run_id, branch"


def head_from_row(row: Sequence[Any] | None) -> StoredHead | None:
    """A row of HEAD_COLUMNS."""
    if row is None:
        return None
    checkpoint_id, next_json, count, run_id, writes, pending = row
    return StoredHead(
        str(checkpoint_id), tuple(json.loads(next_json)), int(count), str(run_id) if run_id else None, int(writes), int(pending)
    )


def summary_from_row(row: Sequence[Any]) -> CheckpointSummary:
    """A row of HISTORY_COLUMNS."""
    checkpoint_id, created_at, step, source, next_json, count, last_json, run_id, branch = row
    last = message_log.decode(last_json) if last_json else None
    return CheckpointSummary(
        checkpoint_id, created_at, step, source, tuple(json.loads(next_json)), count, last, run_id, int(branch or 1)
    )
