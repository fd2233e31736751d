"""ApprovalStore: the durable record of tool calls waiting for a person, the decisions
given, and the tools a person always allows."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from domain.approvals import AllowRule
from domain.principals import BOOTSTRAP_ID

if TYPE_CHECKING:
    from domain.approvals import ApprovalRequest, Decision

__all__ = ["ANY_ARGS", "NO_APPROVALS", "AllowRule", "AnyArgs", "ApprovalStore", "ArgsChecker", "NoApprovals"]


class ApprovalStore(Protocol):
    @abstractmethod
    async def add_request(self, request: ApprovalRequest) -> None:
        """Record a gated call (durably, before the run reports it waiting). Idempotent:
        a request already stored for the conversation and call is left as it is, with its
        decision. The request goes with its conversation."""

    @abstractmethod
    async def get_request(self, conversation_id: str, call_id: str) -> ApprovalRequest | None:
        """The stored request of that call, with its decision if one was given."""

    @abstractmethod
    async def requests(self, conversation_id: str) -> Sequence[ApprovalRequest]:
        """Every request of the conversation, decided or not, oldest first."""

    @abstractmethod
    async def decide(self, conversation_id: str, decisions: Mapping[str, Decision], now: datetime) -> bool:
        """Store the decisions, all or none, in one transaction: False (nothing written)
        when any named call has no request or already has a decision (another tab, a
        double click: a compare-and-set, safe across processes)."""

    @abstractmethod
    async def undecided_before(self, cutoff: datetime) -> Sequence[ApprovalRequest]:
        """Undecided requests stored before `cutoff`, oldest first (APPROVAL_TIMEOUT)."""

    @abstractmethod
    async def allow_always(self, tool: str, now: datetime, conversation_id: str | None = None) -> None:
        """Remember that `tool` never needs approval for the owner of the conversation
        `conversation_id` (None: the bootstrap admin; an unknown conversation: nobody).
        Idempotent. Rules are per user: one user's rule never lets another's call run."""

    @abstractmethod
    async def always_allowed(self, owner: str = BOOTSTRAP_ID) -> Sequence[AllowRule]:
        """The tools the user `owner` always allows, by name."""

    @abstractmethod
    async def rules_for(self, conversation_id: str) -> Sequence[AllowRule]:
        """The tools the owner of the conversation always allows, by name (none for an
        unknown conversation). Only reads."""

    @abstractmethod
    async def revoke(self, tool: str, owner: str = BOOTSTRAP_ID) -> bool:
        """Forget the user `owner`'s rule for `tool`; False when there was none."""

    @abstractmethod
    async def give_rules(self, from_owner: str, to_owner: str) -> int:
        """Make the user `from_owner`'s rules the user `to_owner`'s (a tool both allow keeps
        `to_owner`'s rule), atomically; how many `from_owner` had. Idempotent."""


class ArgsChecker(Protocol):
    @abstractmethod
    def check(self, schema: Mapping[str, Any], args: Mapping[str, Any]) -> str | None:
        """None when `args` fit the JSON schema `schema`, else a one-line reason."""


class NoApprovals(ApprovalStore):
    """A store for runs that never ask (TOOL_APPROVAL=off, tests of other things): no
    request is ever found, a decision is always stale."""

    async def add_request(self, request: ApprovalRequest) -> None:
        return None

    async def get_request(self, conversation_id: str, call_id: str) -> ApprovalRequest | None:
        return None

    async def requests(self, conversation_id: str) -> Sequence[ApprovalRequest]:
        return ()

    async def decide(self, conversation_id: str, decisions: Mapping[str, Decision], now: datetime) -> bool:
        return False

    async def undecided_before(self, cutoff: datetime) -> Sequence[ApprovalRequest]:
        return ()

    async def allow_always(self, tool: str, now: datetime, conversation_id: str | None = None) -> None:
        return None

    async def always_allowed(self, owner: str = BOOTSTRAP_ID) -> Sequence[AllowRule]:
        return ()

    async def rules_for(self, conversation_id: str) -> Sequence[AllowRule]:
        return ()

    async def revoke(self, tool: str, owner: str = BOOTSTRAP_ID) -> bool:
        return False

    async def give_rules(self, from_owner: str, to_owner: str) -> int:
        return 0


class AnyArgs(ArgsChecker):
    """Accepts any arguments (where no schema checker is wired: tests of other things)."""

    def check(self, schema: Mapping[str, Any], args: Mapping[str, Any]) -> str | None:
        return None


NO_APPROVALS = NoApprovals()
ANY_ARGS = AnyArgs()
