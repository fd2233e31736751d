"""USER_MAX_ACTIVE_RUNS and USER_DAILY_TOKENS: who is limited, and the checks made before any work.

The check here is the early, cheap refusal; the run's insert checks again in its own
transaction (ports.runs.LoadCap), so requests racing each other never pass it together."""

from __future__ import annotations

from domain.errors import UserLimitReached
from domain.principals import BOOTSTRAP_ID, Principal
from ports.runs import LoadCap, RunRepository
from services.usage import UsageMeter


def cap_of(by: Principal, limit: int) -> LoadCap | None:
    """The cap on `by`'s runs going and messages queued; None when unlimited (a `limit` of 0)
    and for the bootstrap admin (API_TOKEN, this machine's commands), who is the operator."""
    return LoadCap(by.user_id, limit) if limit and by.user_id != BOOTSTRAP_ID else None


async def admit(runs: RunRepository, by: Principal, limit: int, quota: UsageMeter | None = None) -> None:
    """UserLimitReached when `by` already has `limit` runs going or messages queued;
    QuotaExceeded (with its reset time) when `by` used their tokens for today (`quota`)."""
    cap = cap_of(by, limit)
    if cap is not None and await runs.owner_load(cap.owner) >= cap.limit:
        raise UserLimitReached()
    if quota is not None:
        await quota.admit(by.user_id)
