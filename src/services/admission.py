"""USER_MAX_ACTIVE_RUNS: who is limited, and the check made before any work.

The check here is the early, cheap refusal; the run's insert checks again in its own
transaction (ports.runs.LoadCap), so requests racing each other never pass it together."""

from __future__ import annotations

from domain.errors import UserLimitReached
from domain.principals import BOOTSTRAP_ID, Principal
from ports.runs import LoadCap, RunRepository


def cap_of(by: Principal, limit: int) -> LoadCap | None:
    """The cap on `by`'s runs going and messages queued; None when unlimited (a `limit` of 0)
    and for the bootstrap admin (API_TOKEN, this machine's commands), who is the operator."""
    return LoadCap(by.user_id, limit) if limit and by.user_id != BOOTSTRAP_ID else None


async def admit(runs: RunRepository, by: Principal, limit: int) -> None:
    """UserLimitReached when `by` already has `limit` runs going or messages queued."""
    cap = cap_of(by, limit)
    if cap is not None and await runs.owner_load(cap.owner) >= cap.limit:
        raise UserLimitReached()
