"""The approval requests, their decisions and the always-allow rules on PostgreSQL
(ApprovalStore), on the run store's pool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from adapters.postgres.database import PostgresDatabase
from domain.approvals import ApprovalRequest, Decision, decision_from_dict, decision_to_dict
from domain.model import ToolCall
from domain.principals import BOOTSTRAP_ID
from ports.approvals import AllowRule, ApprovalStore

COLUMNS = "conversation_id, call_id, run_id, name, server, args, description, schema, requested_at, decision, decided_at"


class _Stale(Exception):
    """A decision lost its compare-and-set: roll the whole batch back."""


def request_from_row(row: tuple[Any, ...]) -> ApprovalRequest:
    cid, call_id, run_id, name, server, args, description, schema, requested, decision, decided = row
    return ApprovalRequest(
        cid,
        ToolCall(call_id, name, dict(args)),
        run_id,
        server,
        description,
        dict(schema),
        requested,
        decision_from_dict(decision) if decision else None,
        decided,
    )


class PostgresApprovals(ApprovalStore):
    db: PostgresDatabase

    async def ready(self) -> None:
        raise NotImplementedError

    async def _rows(self, sql: str, args: Sequence[object] | Mapping[str, object] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    async def _select(self, where: str, args: Sequence[object]) -> list[ApprovalRequest]:
        rows = await self._rows(f"SELECT {COLUMNS} FROM tool_approvals WHERE {where}", args)
        return [request_from_row(r) for r in rows]

    async def add_request(self, request: ApprovalRequest) -> None:
        c = request.call
        await self._rows(
            "INSERT INTO tool_approvals (conversation_id, call_id, run_id, name, server, args, description, schema, "
            "requested_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (
                request.conversation_id,
                c.id,
                request.run_id,
                c.name,
                request.server,
                Jsonb(c.args),
                request.description,
                Jsonb(dict(request.schema)),
                request.requested_at,
            ),
        )

    async def get_request(self, conversation_id: str, call_id: str) -> ApprovalRequest | None:
        found = await self._select("conversation_id = %s AND call_id = %s", (conversation_id, call_id))
        return found[0] if found else None

    async def requests(self, conversation_id: str) -> Sequence[ApprovalRequest]:
        return await self._select("conversation_id = %s ORDER BY requested_at, n", (conversation_id,))

    async def decide(self, conversation_id: str, decisions: Mapping[str, Decision], now: datetime) -> bool:
        await self.ready()
        try:
            async with self.db.cursor(transaction=True) as cur:
                for call_id, d in decisions.items():
                    await cur.execute(
                        "UPDATE tool_approvals SET decision = %s, decided_at = %s "
                        "WHERE conversation_id = %s AND call_id = %s AND decision IS NULL",
                        (Jsonb(decision_to_dict(d)), now, conversation_id, call_id),
                    )
                    if cur.rowcount != 1:
                        raise _Stale()
        except _Stale:
            return False
        return True

    async def undecided_before(self, cutoff: datetime) -> Sequence[ApprovalRequest]:
        return await self._select("decision IS NULL AND requested_at < %s ORDER BY requested_at, n", (cutoff,))

    async def allow_always(self, tool: str, now: datetime, conversation_id: str | None = None) -> None:
        if conversation_id is None:
            await self._rows(
                "INSERT INTO tool_allow_rules (owner, tool, since) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (BOOTSTRAP_ID, tool, now),
            )
            return
        # the owner read in the same statement: nothing can change it in between
        await self._rows(
            "INSERT INTO tool_allow_rules (owner, tool, since) SELECT owner, %s, %s FROM conversations "
            "WHERE id = %s ON CONFLICT DO NOTHING",
            (tool, now, conversation_id),
        )

    async def always_allowed(self, owner: str = BOOTSTRAP_ID) -> Sequence[AllowRule]:
        rows = await self._rows("SELECT tool, since FROM tool_allow_rules WHERE owner = %s ORDER BY tool", (owner,))
        return [AllowRule(r[0], r[1]) for r in rows]

    async def rules_for(self, conversation_id: str) -> Sequence[AllowRule]:
        rows = await self._rows(
            "SELECT r.tool, r.since FROM tool_allow_rules r JOIN conversations c ON c.owner = r.owner "
            "WHERE c.id = %s ORDER BY r.tool",
            (conversation_id,),
        )
        return [AllowRule(r[0], r[1]) for r in rows]

    async def give_rules(self, from_owner: str, to_owner: str) -> int:
        # one statement, one transaction: the moved rules are inserted, then the old ones go
        rows = await self._rows(
            "WITH gone AS (DELETE FROM tool_allow_rules WHERE owner = %(f)s RETURNING tool, since), "
            "kept AS (INSERT INTO tool_allow_rules (owner, tool, since) SELECT %(t)s, tool, since FROM gone "
            "ON CONFLICT DO NOTHING) SELECT count(*) FROM gone",
            {"f": from_owner, "t": to_owner},
        )
        return int(rows[0][0])

    async def revoke(self, tool: str, owner: str = BOOTSTRAP_ID) -> bool:
        return bool(await self._rows("DELETE FROM tool_allow_rules WHERE owner = %s AND tool = %s RETURNING tool", (owner, tool)))
