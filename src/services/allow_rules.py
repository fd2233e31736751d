"""The tools a person always allows (the "Always allow" of an approval): list, revoke."""

from __future__ import annotations

from collections.abc import Sequence

from domain.errors import AllowRuleNotFound, InvalidInput
from domain.principals import LOCAL, Principal
from ports.approvals import AllowRule, ApprovalStore


class AllowRules:
    def __init__(self, store: ApprovalStore) -> None:
        self.store = store

    async def list(self) -> Sequence[AllowRule]:
        """Every tool that never asks any more, by name."""
        return await self.store.always_allowed()

    async def revoke(self, tool: object, *, by: Principal = LOCAL) -> None:
        """Ask again before `tool` runs; AllowRuleNotFound when no rule names it. The rules
        are the server's, shared by every user: only an admin revokes one (anyone else is
        answered as if there were no such rule, and nothing changes)."""
        if not isinstance(tool, str) or not tool.strip():
            raise InvalidInput("A tool name is required (as `sophos approvals list` shows it)")
        if not by.is_admin:
            raise AllowRuleNotFound(f"No always-allow rule for {tool.strip()!r} (see sophos approvals list)")
        if not await self.store.revoke(tool.strip()):
            raise AllowRuleNotFound(f"No always-allow rule for {tool.strip()!r} (see sophos approvals list)")
