"""Usage and quotas (issue 47 item 3): what one model or tool call costs, the rows kept per
user, model and UTC day, and the daily token quota's rules. Pure values and functions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta


@dataclass(frozen=True)
class Cost:
    """What one call adds to its day's row. A model call counts its tokens (`estimated`
    when the server reported none and they were estimated), its seconds and one call; a
    tool call only its seconds."""

    input_tokens: int = 0
    output_tokens: int = 0
    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    calls: int = 0
    estimated: bool = False


@dataclass(frozen=True)
class UsageRow:
    """A user's (by id) use of one model on one UTC day. `estimated_calls`: how many of
    `calls` had their tokens estimated (the server reported none)."""

    user: str
    model: str
    day: date
    input_tokens: int
    output_tokens: int
    model_seconds: float
    tool_seconds: float
    calls: int
    estimated_calls: int = 0
    user_name: str | None = None  # the user's name, where a report looked it up

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def day_of(at: datetime) -> date:
    """The UTC day `at` falls on: quotas and rows are per UTC day, wherever the server runs."""
    return at.astimezone(UTC).date()


def reset_at(at: datetime) -> datetime:
    """When the day's quota starts again: the next UTC midnight after `at`."""
    return datetime.combine(day_of(at) + timedelta(days=1), time(), UTC)


def over_quota(used: int, limit: int) -> bool:
    """Whether a user who used `used` tokens today may make no further model call: a limit of
    0 is no limit; a call that started under the limit finishes, so `used` may pass it."""
    return limit > 0 and used >= limit
