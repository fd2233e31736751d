"""ApprovalGate: the approval policy applied for the agent, through the approval store."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from domain.approvals import (
    SEP,
    ApprovalMode,
    ApprovalRequest,
    RunCall,
    Verdict,
    Wait,
    decided,
    needs_approval,
)
from domain.model import ToolCall, utc_now
from domain.tools import ToolSpec
from ports.approvals import ApprovalStore


class ApprovalGate:
    """Applies the policy for the agent, before each tool call: the stored decision, or
    a new request stored and waited for."""

    def __init__(self, store: ApprovalStore, mode: ApprovalMode, clock: Callable[[], datetime] = utc_now) -> None:
        self.store = store
        self.mode = mode
        self.clock = clock

    async def check(self, conversation_id: str, run_id: str | None, call: ToolCall, spec: ToolSpec | None) -> Verdict:
        request = await self.store.get_request(conversation_id, call.id)
        if request is not None:  # asked before: its decision holds even if the policy changed since
            return decided(request)
        # the conversation's owner's rules: one user's "always allow" never lets another's call run
        always = {r.tool for r in await self.store.rules_for(conversation_id)} if self.mode is not ApprovalMode.OFF else set()
        if not needs_approval(self.mode, spec, always):
            return RunCall(dict(call.args))
        server = call.name.partition(SEP)[0] if SEP in call.name else ""
        new = ApprovalRequest(
            conversation_id,
            call,
            run_id,
            server,
            spec.description if spec else "",
            dict(spec.parameters) if spec else {},
            self.clock(),
        )
        await self.store.add_request(new)
        return Wait(new)
