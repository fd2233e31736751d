"""The audit log's use cases (issue 47 item 4): record who did what, read it (admins only),
prune it past AUDIT_RETENTION_DAYS.

Who acts and from where is set once per request or command at the edge (`acting`: the
HTTP guard sets the principal's name and the client's address, the CLI `cli:<os user>`),
in a context variable the use cases' records read, so no use case passes an address
around; a record may name its actor itself (a login names who logged in)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from datetime import datetime, timedelta

from domain.audit import UNKNOWN_CALLER, Action, AuditEntry, Caller, clipped
from domain.errors import Forbidden, SophosError
from domain.model import utc_now
from domain.principals import Principal
from ports.audit import AuditLog

log = logging.getLogger(__name__)

CALLER: ContextVar[Caller] = ContextVar("sophos_audit_caller", default=UNKNOWN_CALLER)
PRUNE_EVERY = 3600.0  # seconds between two prunes: the maintenance loop runs far more often
MAX_ENTRIES = 10_000  # rows one read returns at most


def acting(caller: Caller) -> None:
    """Who acts from here on, in this task and the tasks it starts (an edge calls it once)."""
    CALLER.set(caller)


class AuditTrail:
    """`log` None: nothing is recorded (a test's service built without one)."""

    def __init__(
        self,
        log: AuditLog | None,
        retention_days: int = 365,
        clock: Callable[[], datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = log
        self.retention_days = retention_days
        self.clock = clock
        self.monotonic = monotonic
        self._pruned: float | None = None

    async def record(
        self, action: Action, target: str = "", detail: str = "", *, actor: str | None = None, origin: str | None = None
    ) -> None:
        """Append a row for `action`, done by the caller (or `actor`, from `origin`) just now.
        The action is done already: a store that refuses the row is logged, never turned
        into its failure."""
        if self.log is None:
            return
        caller = CALLER.get()
        who, where = clipped(actor or caller.actor), clipped(origin or caller.origin)
        entry = AuditEntry(self.clock(), who, action.value, where, clipped(target), clipped(detail))
        try:
            await self.log.append(entry)
        except SophosError as e:
            log.error("audit row not stored (%s %s by %s from %s): %s", action.value, target, entry.actor, entry.origin, e)

    async def entries(self, since: datetime | None = None, limit: int = 1000, *, by: Principal) -> Sequence[AuditEntry]:
        """The rows from `since` on, oldest first, at most `limit` (MAX_ENTRIES at most);
        Forbidden for anyone but an admin."""
        if not by.is_admin:
            raise Forbidden("The audit log is for admins")
        if self.log is None:
            return []
        return await self.log.entries(since, max(1, min(limit, MAX_ENTRIES)))

    async def prune(self) -> int:
        """Remove rows older than the retention, at most once per PRUNE_EVERY seconds; 0
        when kept for ever (a retention of 0) or not due."""
        now = self.monotonic()
        if self.log is None or not self.retention_days or (self._pruned is not None and now - self._pruned < PRUNE_EVERY):
            return 0
        self._pruned = now
        removed = await self.log.prune(self.clock() - timedelta(days=self.retention_days))
        if removed:
            log.info("audit log: %d rows older than %d days removed", removed, self.retention_days)
        return removed


NO_AUDIT = AuditTrail(None)
