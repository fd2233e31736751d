"""ApprovalStore in memory: plain dicts behind the run store's lock."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from domain.approvals import ApprovalRequest, Decision
from domain.model import Conversation
from domain.principals import BOOTSTRAP_ID
from ports.approvals import AllowRule, ApprovalStore


class InMemoryApprovals(ApprovalStore):
    _lock: threading.Lock
    _conversations: dict[str, Conversation]  # the run store's: a rule belongs to a conversation's owner

    def _approvals_init(self) -> None:
        self._requests: dict[tuple[str, str], ApprovalRequest] = {}  # insertion order is request order
        self._rules: dict[tuple[str, str], AllowRule] = {}  # (owner, tool) -> rule

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
            return sorted((r for (cid, _), r in self._requests.items() if cid == conversation_id), key=lambda r: r.requested_at)

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
            return sorted(
                (r for r in self._requests.values() if r.decision is None and r.requested_at < cutoff),
                key=lambda r: r.requested_at,
            )

    async def allow_always(self, tool: str, now: datetime, conversation_id: str | None = None) -> None:
        with self._lock:
            conv = self._conversations.get(conversation_id) if conversation_id is not None else None
            if conversation_id is not None and conv is None:
                return
            owner = conv.owner if conv is not None else BOOTSTRAP_ID
            self._rules.setdefault((owner, tool), AllowRule(tool, now))

    async def always_allowed(self, owner: str = BOOTSTRAP_ID) -> Sequence[AllowRule]:
        with self._lock:
            return sorted((r for (o, _), r in self._rules.items() if o == owner), key=lambda r: r.tool)

    async def rules_for(self, conversation_id: str) -> Sequence[AllowRule]:
        with self._lock:
            conv = self._conversations.get(conversation_id)
        return await self.always_allowed(conv.owner) if conv is not None else ()

    async def give_rules(self, from_owner: str, to_owner: str) -> int:
        with self._lock:
            mine = [(key, rule) for key, rule in self._rules.items() if key[0] == from_owner]
            for (_, tool), rule in mine:
                del self._rules[(from_owner, tool)]
                self._rules.setdefault((to_owner, tool), rule)
            return len(mine)

    async def revoke(self, tool: str, owner: str = BOOTSTRAP_ID) -> bool:
        with self._lock:
            return self._rules.pop((owner, tool), None) is not None
