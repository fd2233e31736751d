"""Scheduled runs: a message sent for a user at times a cron expression names (in a time
zone) or once at a given time, as plain values and the rules that decide when they fire.

A schedule keeps `next_at`, the next firing due (UTC). A process claims that firing in
the transaction that starts its run (ports.schedules): the claim is a compare-and-set on
`next_at`, so any number of processes start it once. The firings that fell while no
process ran are "missed" (`plan_tick`): they run once, as the latest of them, or are
skipped, as `catch_up` says; never once each.

Cron expressions are parsed by cronsim (Debian cron's rules, so a daily time that a
daylight-saving change skips fires once at the first time after the gap, and one the change
repeats fires once); the six-field form starts with seconds."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from cronsim import CronSim, CronSimError

from domain.crons import GraphInput
from domain.errors import InvalidInput, ScheduleNotFound

MAX_CRON = 120  # characters: a cron expression is short; a longer one is hostile
MAX_MESSAGE = 16_000  # characters, as a chat message
# a tick this long after the last one (of any process): every process was down (or stalled
# as long), and the firings between were missed; shorter gaps (a restart) only make them late
GAP_SECONDS = 30.0


class CatchUp(StrEnum):
    """What the firings missed while no process ran come to."""

    ONCE = "once"  # one run at start-up, for the latest of them
    SKIP = "skip"  # none: the schedule goes on from the next firing


@dataclass(frozen=True)
class Timing:
    """When a schedule fires: a cron expression read in `tz`, or once at `at` (aware)."""

    cron: str | None
    tz: str = "UTC"
    at: datetime | None = None

    def __post_init__(self) -> None:
        if (self.cron is None) == (self.at is None):
            raise InvalidInput("A schedule needs a cron expression or a time (at), not both")
        zone(self.tz)
        if self.cron is not None:
            check_cron(self.cron)
        if self.at is not None and self.at.tzinfo is None:
            raise InvalidInput("at must carry a time zone offset")

    def next_after(self, moment: datetime) -> datetime | None:
        """The first firing strictly after `moment` (UTC), None when there is none."""
        if self.at is not None:
            at = self.at.astimezone(UTC)
            return at if at > moment else None
        assert self.cron is not None
        return next(CronSim(self.cron, moment.astimezone(zone(self.tz)))).astimezone(UTC)

    def latest_until(self, moment: datetime) -> datetime | None:
        """The last firing at or before `moment` (UTC), None when there is none."""
        if self.at is not None:
            at = self.at.astimezone(UTC)
            return at if at <= moment else None
        assert self.cron is not None
        start = (moment + timedelta(microseconds=1)).astimezone(zone(self.tz))
        return next(CronSim(self.cron, start, reverse=True)).astimezone(UTC)


def zone(name: str) -> ZoneInfo:
    """The IANA time zone `name`; InvalidInput for an unknown one (or a path)."""
    if not isinstance(name, str) or not 0 < len(name) <= 64 or name not in _zones():
        raise InvalidInput(f"Unknown time zone: {str(name)[:64]!r}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise InvalidInput(f"Unknown time zone: {name!r}") from e


_ZONES: set[str] = set()


def _zones() -> set[str]:
    if not _ZONES:
        _ZONES.update(available_timezones() | {"UTC"})
    return _ZONES


def check_cron(expr: object) -> str:
    """A cron expression of five fields (minute first) or six (seconds first), checked by
    cronsim; InvalidInput otherwise."""
    if not isinstance(expr, str) or not expr.strip() or len(expr) > MAX_CRON:
        raise InvalidInput(f"cron must be a cron expression of at most {MAX_CRON} characters")
    fields = expr.split()
    if len(fields) not in (5, 6):
        raise InvalidInput("cron must have 5 fields (minute hour day month weekday) or 6 (seconds first)")
    try:
        CronSim(expr, datetime(2000, 1, 1, tzinfo=UTC))
    except (CronSimError, ValueError, KeyError, IndexError) as e:
        raise InvalidInput(f"Invalid cron expression: {e}") from e
    return " ".join(fields)


@dataclass(frozen=True)
class Schedule:
    """A user's schedule. `conversation_id` None: a new conversation per firing.
    `next_at`: the next firing due (UTC); None when none is left (a one-off that fired, an
    end date passed). `enabled` False: paused (nothing fires; resuming goes on from the
    next firing after that moment, never catching up on the pause). `graph`: a firing runs
    that hosted graph with its own input (a LangGraph cron; `message` is then empty), not
    Sophos's agent with `message`. `webhook`: the URL told when a firing's run ends."""

    id: str
    owner: str
    timing: Timing
    message: str
    created_at: datetime
    conversation_id: str | None = None
    catch_up: CatchUp = CatchUp.ONCE
    enabled: bool = True
    ends_at: datetime | None = None
    next_at: datetime | None = None
    last_run_id: str | None = None
    last_fired_for: datetime | None = None
    graph: GraphInput | None = None
    webhook: str | None = None  # called when each firing's run ends (domain.webhooks)

    def __post_init__(self) -> None:
        check_sends(self.message, self.graph)

    def following(self, moment: datetime) -> datetime | None:
        """The first firing strictly after `moment` that is not past the end date."""
        found = self.timing.next_after(moment)
        if found is None or (self.ends_at is not None and found > self.ends_at):
            return None
        return found

    def armed(self, now: datetime) -> Schedule:
        """This schedule with `next_at` the first firing after `now` (made, edited, resumed)."""
        return replace(self, next_at=self.following(now) if self.enabled else None)


@dataclass(frozen=True)
class ScheduleSpec:
    """A new schedule as a person asks for it; `conversation_id` None: a new conversation
    per firing."""

    timing: Timing
    message: str
    conversation_id: str | None = None
    catch_up: CatchUp = CatchUp.ONCE
    ends_at: datetime | None = None
    enabled: bool = True
    graph: GraphInput | None = None
    webhook: str | None = None  # checked against WEBHOOK_ALLOWED_HOSTS by the service

    def __post_init__(self) -> None:
        check_sends(self.message, self.graph)
        if self.ends_at is not None and self.ends_at.tzinfo is None:
            raise InvalidInput("endsAt must carry a time zone offset")

    def schedule(self, schedule_id: str, owner: str, now: datetime) -> Schedule:
        """The schedule, armed for its first firing after `now`."""
        made = Schedule(
            schedule_id,
            owner,
            self.timing,
            self.message,
            now,
            self.conversation_id,
            self.catch_up,
            self.enabled,
            self.ends_at,
            graph=self.graph,
            webhook=self.webhook,
        )
        return made.armed(now)


@dataclass(frozen=True)
class ScheduleEdit:
    """A change to a schedule: None leaves a field as it is (`clear_end`: no end date any
    more). A new cron replaces a one-off time and the other way round. Any edit re-arms the
    schedule from now: a resumed schedule never catches up on its pause."""

    cron: str | None = None
    tz: str | None = None
    at: datetime | None = None
    message: str | None = None
    catch_up: CatchUp | None = None
    ends_at: datetime | None = None
    clear_end: bool = False
    enabled: bool | None = None
    graph: GraphInput | None = None
    webhook: str | None = None
    clear_webhook: bool = False

    def apply(self, schedule: Schedule, now: datetime) -> Schedule:
        old = schedule.timing
        cron = self.cron if self.cron is not None else (None if self.at is not None else old.cron)
        at = self.at if self.at is not None else (None if self.cron is not None else old.at)
        edited = replace(
            schedule,
            timing=Timing(cron, self.tz or old.tz, at),
            message=self.message if self.message is not None else schedule.message,
            catch_up=self.catch_up or schedule.catch_up,
            ends_at=None if self.clear_end else (self.ends_at or schedule.ends_at),
            enabled=schedule.enabled if self.enabled is None else self.enabled,
            graph=self._graph(schedule),
            webhook=None if self.clear_webhook else (self.webhook if self.webhook is not None else schedule.webhook),
        )
        return edited.armed(now)

    def _graph(self, schedule: Schedule) -> GraphInput | None:
        if self.graph is not None and schedule.graph is None:
            raise InvalidInput("A schedule of Sophos's agent sends a message, not a graph's input")
        return self.graph or schedule.graph


def check_sends(message: object, graph: GraphInput | None) -> None:
    """A schedule sends a message to Sophos's agent or (with `graph`) a graph's input, with
    no message."""
    if graph is None:
        check_message_text(message)
    elif message != "":
        raise InvalidInput("A schedule of a hosted graph sends its input, not a message")


def check_message_text(text: object) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("A schedule needs a message")
    if len(text) > MAX_MESSAGE:
        raise InvalidInput(f"The message is longer than {MAX_MESSAGE} characters")
    return text


def parse_catch_up(value: object) -> CatchUp:
    if value is None:
        return CatchUp.ONCE
    if isinstance(value, str) and value in CatchUp.__members__.values():
        return CatchUp(value)
    raise InvalidInput('catchUp must be "once" or "skip"')


@dataclass(frozen=True)
class FiringClaim:
    """A firing to start, for the time `scheduled_for`: the schedule's `next_at` is still
    `expected` (None: `scheduled_for`; a catch-up's latest firing differs) and becomes
    `following` in the transaction that creates its run (or queues its message). `redo`:
    the firing's run stopped before its message was saved; it is started again (the
    firing's own row is claimed, not the schedule's `next_at`)."""

    schedule_id: str
    scheduled_for: datetime
    following: datetime | None
    redo: bool = False
    expected: datetime | None = None

    @property
    def due(self) -> datetime:
        """The `next_at` the claim compares with."""
        return self.expected if self.expected is not None else self.scheduled_for


@dataclass(frozen=True)
class Firing:
    """A firing that was claimed: the run (or the queued message whose run takes its id)
    started for the schedule's time `scheduled_for`. `redo`: its run stopped before its
    message was saved, and it waits to be started again."""

    schedule_id: str
    scheduled_for: datetime
    run_id: str
    conversation_id: str
    queued: bool = False
    redo: bool = False


@dataclass(frozen=True)
class TickPlan:
    """What a tick does with a due schedule: start the firing `fire` (None: none) and set
    `next_at` to `following`; `missed`: how many firings were passed over (at most 2 when
    counted exactly is costly: `missed_some` says whether any were)."""

    fire: datetime | None
    following: datetime | None
    missed_some: bool = False


def plan_tick(schedule: Schedule, now: datetime, last_tick: datetime | None, gap: float = GAP_SECONDS) -> TickPlan | None:
    """What is due of `schedule` at `now`, given the last time any process ticked before
    this one (`last_tick`; None: never). None when nothing is due.

    A firing that fell while some process ticked (at or before `last_tick`, or since a tick
    less than `gap` seconds ago) is due however late: it runs, one at a time, in order. The
    firings that fell after the last tick of a gap are missed: with `catch_up` once the
    latest of them runs (once), with skip none does; the schedule goes on after `now`."""
    due = schedule.next_at
    if not schedule.enabled or due is None or due > now:
        return None
    awake = last_tick is not None and (now - last_tick).total_seconds() < gap
    if awake or (last_tick is not None and due <= last_tick):
        return TickPlan(due, schedule.following(due))
    latest = schedule.timing.latest_until(min(now, schedule.ends_at or now))
    if latest is None or latest < due:
        latest = due
    following = schedule.following(now)
    missed_some = latest != due
    if schedule.catch_up is CatchUp.SKIP:
        return TickPlan(None, following, missed_some=True)
    return TickPlan(latest, following, missed_some=missed_some)


def lateness(firing: datetime, now: datetime) -> float:
    """Seconds between a firing's time and its start (0 when early: a clock skew)."""
    return max((now - firing).total_seconds(), 0.0)


def check_schedule_id(value: object) -> str:
    """A schedule id (a UUID, as `new_id` makes them); ScheduleNotFound for anything else,
    as for an unknown one."""
    try:
        return str(uuid.UUID(value)) if isinstance(value, str) and len(value) <= 40 else _unknown()
    except ValueError:
        return _unknown()


def _unknown() -> str:
    raise ScheduleNotFound()
