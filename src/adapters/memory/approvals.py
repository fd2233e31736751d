"""ApprovalStore in memory: plain dicts behind the run store's lock."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from domain.approvals import ApprovalRequest, Decision
from ports.approvals import AllowRule, ApprovalStore


class InMemoryApprovals(ApprovalStore):
    _lock: threading.Lock

    def _approvals_init(self) -> None:
        self._requests: dict[tuple[str, str], ApprovalRequest] = {}  # insertion order is request order
        self._rules: dict[str, AllowRule] = {}

    def _forget_approvals(self, conversation_id: str) -> None:
        for key in [k for k in self._requests if k[0] == conversation_id]:
            del self._requests[key]

    async def add_request(self, request: ApprovalRequest) -> None:
        with self._lock:
            self._requests.setdefault((request.conversation_id, request.call.id), request)

    async def get_request(self, conversation_id: str, call_id: str) -> ApprovalRequest | None:
        with self._lock:
            return self._requests.get((conversation_id, call_id))

    async def requests(self, conversation_id: str) -> Sequence[ApprovalRequest]:
        with self._lock:
            return sorted((r for (cid, _), r in self._requests.items() if cid == conversation_id),
                          key=lambda r: r.requested_at)

    async def decide(self, conversation_id: str, decisions: Mapping[str, Decision], now: datetime) -> bool:
        with self._lock:
            found = [self._requests.get((conversation_id, call_id)) for call_id in decisions]
            if any(r is None or r.decision is not None for r in found):
                return False
            for call_id, d in decisions.items():
                key = (conversation_id, call_id)
                self._requests[key] = replace(self._requests[key], decision=d, decided_at=now)
            return True

    async def undecided_before(self, cutoff: datetime) -> Sequence[ApprovalRequest]:
        with self._lock:
            return sorted((r for r in self._requests.values() if r.decision is None and r.requested_at < cutoff),
                          key=lambda r: r.requested_at)

    async def allow_always(self, tool: str, now: datetime) -> None:
        with self._lock:
            self._rules.setdefault(tool, AllowRule(tool, now))

    async def always_allowed(self) -> Sequence[AllowRule]:
        with self._lock:
            return sorted(self._rules.values(), key=lambda r: r.tool)

    async def revoke(self, tool: str) -> bool:
        with self._lock:
            return self._rules.pop(tool, None) is not None
