"""Usage per user, model and UTC day, and the daily token quota (issue 47 item 3).

The meter counts each model call of a run (its tokens as the model server reported them,
else estimated and marked so; its seconds) and each tool call's seconds against the
conversation's owner, in the row of the call's model and UTC day. A row is written right
after the call ends, in its own transaction, before the step's checkpoint: a call is added
once (the write is never retried), a kill -9 between a call's end and that write loses the
call's count, and a step run again after a crash is a second call the server served, counted
again. The quota (USER_DAILY_TOKENS) is checked when a run is admitted and before each
model call; a call in flight always finishes, so a day's total may pass the quota by one
call's tokens."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import date, datetime, timedelta

from domain.errors import Forbidden, InvalidInput, QuotaExceeded
from domain.model import utc_now
from domain.principals import BOOTSTRAP_ID, Principal
from domain.traces import SpanEnd
from domain.usage import Cost, UsageRow, day_of, over_quota, reset_at
from ports.metrics import NO_METRICS, MetricsPort
from ports.runs import RunRepository
from ports.usage import UsageStore
from ports.users import UserStore

MAX_DAYS = 366  # a report's range at most: a year of rows is a bounded answer
OWNERS_KEPT = 1024


def model_cost(reported: tuple[int, int] | None, estimate: Callable[[], tuple[int, int]], seconds: float) -> Cost:
    """A model call's cost: the server's counts (in, out) when it reported them, else the
    estimate, marked."""
    if reported is not None:
        return Cost(reported[0], reported[1], seconds, 0.0, 1)
    guessed_in, guessed_out = estimate()
    return Cost(guessed_in, guessed_out, seconds, 0.0, 1, estimated=True)


class UsageMeter:
    """What a run's nodes call around each model and tool call. `daily_tokens` 0: no quota.
    The bootstrap admin (API_TOKEN, this machine's commands), who runs the server, has none."""

    def __init__(
        self,
        store: UsageStore,
        runs: RunRepository,
        daily_tokens: int = 0,
        clock: Callable[[], datetime] = utc_now,
        metrics: MetricsPort = NO_METRICS,
    ) -> None:
        self.store = store
        self.runs = runs
        self.daily_tokens = daily_tokens
        self.clock = clock
        self.metrics = metrics
        self._owners: OrderedDict[str, str] = OrderedDict()  # conversation -> owner, bounded

    async def owner_of(self, conversation_id: str, fresh: bool = False) -> str:
        """The conversation's owner, whom its calls are counted against: read at each
        step's start (`fresh`: a `sophos users claim` in another process changes it), kept
        for the step's calls."""
        owner = None if fresh else self._owners.get(conversation_id)
        if owner is None:
            found = await self.runs.get_conversation(conversation_id)
            owner = found.owner if found is not None else BOOTSTRAP_ID
            self._owners[conversation_id] = owner
            self._owners.move_to_end(conversation_id)
            if len(self._owners) > OWNERS_KEPT:
                self._owners.popitem(last=False)
        return owner

    async def admit(self, user: str) -> None:
        """QuotaExceeded (with the reset time) when `user` used their tokens for today."""
        if not self.daily_tokens or user == BOOTSTRAP_ID:
            return
        now = self.clock()
        if over_quota(await self.store.tokens(user, day_of(now)), self.daily_tokens):
            raise QuotaExceeded(reset_at(now))

    async def before_model_call(self, conversation_id: str) -> None:
        """At an agent step's start: QuotaExceeded when the conversation's owner used their
        tokens for today."""
        owner = await self.owner_of(conversation_id, fresh=True)
        if self.daily_tokens:
            await self.admit(owner)

    async def model_call(self, conversation_id: str, model: str, cost: Cost, span: SpanEnd | None = None) -> None:
        """`span`: the call's trace span's end, written with the call's row."""
        await self.store.add(await self.owner_of(conversation_id), model, day_of(self.clock()), cost, span)
        self.metrics.model_tokens(model, cost.input_tokens, cost.output_tokens)

    async def tool_call(self, conversation_id: str, model: str, seconds: float) -> None:
        """A tool call's seconds, in the row of the run's model (the model that asked for it)."""
        await self.store.add(await self.owner_of(conversation_id), model, day_of(self.clock()), Cost(tool_seconds=seconds))


class UsageService:
    """The usage report (GET /api/usage, `sophos usage`): a user's own rows; an admin's
    `everyone` adds every user's."""

    def __init__(self, store: UsageStore, users: UserStore | None = None, clock: Callable[[], datetime] = utc_now) -> None:
        self.store = store
        self.users = users  # to name each row's user (None: rows name ids only)
        self.clock = clock

    async def report(
        self, first: date | None = None, last: date | None = None, *, everyone: bool = False, by: Principal
    ) -> Sequence[UsageRow]:
        """Rows of days `first` to `last` (UTC, both included; defaults: the last 30 days to
        today). Forbidden for `everyone` unless `by` is an admin; InvalidInput for a range
        that ends before it starts or spans more than MAX_DAYS days."""
        if everyone and not by.is_admin:
            raise Forbidden("Only an admin may see every user's usage")
        today = day_of(self.clock())
        last = last or today
        first = first or last - timedelta(days=29)
        if first > last:
            raise InvalidInput("`from` is after `to`")
        if (last - first).days >= MAX_DAYS:
            raise InvalidInput(f"a usage report covers at most {MAX_DAYS} days")
        rows = await self.store.rows(None if everyone else by.user_id, first, last)
        names = {BOOTSTRAP_ID: BOOTSTRAP_ID, by.user_id: by.name}
        if everyone and self.users is not None and rows:
            names.update({u.id: u.name for u in await self.users.users()})  # users are never deleted
        return [replace(r, user_name=names.get(r.user)) for r in rows]


def parse_day(value: object, name: str) -> date | None:
    """A day given as YYYY-MM-DD (None when not given); InvalidInput otherwise."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"`{name}` is a day, YYYY-MM-DD")
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInput(f"`{name}` is a day, YYYY-MM-DD (got {value[:40]!r})") from None
