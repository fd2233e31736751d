"""The tools a person always allows (the "Always allow" of an approval): list, revoke."""

from __future__ import annotations

from collections.abc import Sequence

from domain.errors import AllowRuleNotFound, InvalidInput
from ports.approvals import AllowRule, ApprovalStore


class AllowRules:
    def __init__(self, store: ApprovalStore) -> None:
        self.store = store

    async def list(self) -> Sequence[AllowRule]:
        """Every tool that never asks any more, by name."""
        return await self.store.always_allowed()

    async def revoke(self, tool: object) -> None:
        """Ask again before `tool` runs; AllowRuleNotFound when no rule names it."""
        if not isinstance(tool, str) or not tool.strip():
            raise InvalidInput("A tool name is required (as `sophos approvals list` shows it)")
        if not await self.store.revoke(tool.strip()):
            raise AllowRuleNotFound(f"No always-allow rule for {tool.strip()!r} (see sophos approvals list)")
