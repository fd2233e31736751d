"""The tools a person always allows (the "Always allow" of an approval): list, revoke."""

from __future__ import annotations

from collections.abc import Sequence

from domain.audit import Action
from domain.errors import AllowRuleNotFound, InvalidInput
from domain.principals import LOCAL, Principal
from ports.approvals import AllowRule, ApprovalStore
from services.audit import NO_AUDIT, AuditTrail


class AllowRules:
    def __init__(self, store: ApprovalStore, audit: AuditTrail = NO_AUDIT) -> None:
        self.store = store
        self.audit = audit

    async def list(self, *, by: Principal = LOCAL) -> Sequence[AllowRule]:
        """Every tool that never asks `by` any more, by name."""
        return await self.store.always_allowed(by.user_id)

    async def revoke(self, tool: object, *, by: Principal = LOCAL) -> None:
        """Ask `by` again before `tool` runs; AllowRuleNotFound when no rule of theirs names
        it (another user's rule is theirs alone: it is neither seen nor touched)."""
        if not isinstance(tool, str) or not tool.strip():
            raise InvalidInput("A tool name is required (as `sophos approvals list` shows it)")
        if not await self.store.revoke(tool.strip(), by.user_id):
            raise AllowRuleNotFound(f"No always-allow rule for {tool.strip()!r} (see sophos approvals list)")
        await self.audit.record(Action.RULE_REVOKED, tool.strip())
