"""The approval requests, their decisions and the always-allow rules on the SQLite file
(ApprovalStore), on the run store's writer and reader."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from adapters.sqlite.database import Worker, transaction
from adapters.sqlite.rows import fetchall
from domain.approvals import ApprovalRequest, Decision, decision_from_dict, decision_to_dict
from domain.model import ToolCall, iso
from domain.principals import BOOTSTRAP_ID
from ports.approvals import AllowRule, ApprovalStore

COLUMNS = "conversation_id, call_id, run_id, name, server, args, description, schema, requested_at, decision, decided_at"


class _Stale(Exception):
    """A decision lost its compare-and-set: roll the whole batch back."""


def request_from_row(row: tuple[Any, ...]) -> ApprovalRequest:
    cid, call_id, run_id, name, server, args, description, schema, requested, decision, decided = row
    return ApprovalRequest(
        cid,
        ToolCall(call_id, name, json.loads(args)),
        run_id,
        server,
        description,
        json.loads(schema),
        datetime.fromisoformat(requested),
        decision_from_dict(json.loads(decision)) if decision else None,
        datetime.fromisoformat(decided) if decided else None,
    )


class SqliteApprovals(ApprovalStore):
    _writer: Worker
    _reader: Worker

    async def _select(self, where: str, args: Sequence[object]) -> list[ApprovalRequest]:
        rows = await self._reader.run(fetchall, f"SELECT {COLUMNS} FROM tool_approvals WHERE {where}", args)
        return [request_from_row(r) for r in rows]

    async def add_request(self, request: ApprovalRequest) -> None:
        c = request.call
        row = (
            request.conversation_id,
            c.id,
            request.run_id,
            c.name,
            request.server,
            json.dumps(c.args),
            request.description,
            json.dumps(request.schema),
            iso(request.requested_at),
        )

        def write(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute(
                    "INSERT INTO tool_approvals (conversation_id, call_id, run_id, name, server, args, description, "
                    "schema, requested_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    row,
                )

        await self._writer.run(write)

    async def get_request(self, conversation_id: str, call_id: str) -> ApprovalRequest | None:
        found = await self._select("conversation_id = ? AND call_id = ?", (conversation_id, call_id))
        return found[0] if found else None

    async def requests(self, conversation_id: str) -> Sequence[ApprovalRequest]:
        return await self._select("conversation_id = ? ORDER BY requested_at, rowid", (conversation_id,))

    async def decide(self, conversation_id: str, decisions: Mapping[str, Decision], now: datetime) -> bool:
        rows = [(json.dumps(decision_to_dict(d)), iso(now), conversation_id, call_id) for call_id, d in decisions.items()]

        def write(conn: sqlite3.Connection) -> bool:
            try:
                with transaction(conn):
                    for row in rows:
                        cur = conn.execute(
                            "UPDATE tool_approvals SET decision = ?, decided_at = ? "
                            "WHERE conversation_id = ? AND call_id = ? AND decision IS NULL",
                            row,
                        )
                        if cur.rowcount != 1:
                            raise _Stale()
            except _Stale:
                return False
            return True

        return await self._writer.run(write)

    async def undecided_before(self, cutoff: datetime) -> Sequence[ApprovalRequest]:
        return await self._select("decision IS NULL AND requested_at < ? ORDER BY requested_at", (iso(cutoff),))

    async def allow_always(self, tool: str, now: datetime, conversation_id: str | None = None) -> None:
        def write(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                if conversation_id is None:
                    conn.execute(
                        "INSERT INTO tool_allow_rules (owner, tool, since) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                        (BOOTSTRAP_ID, tool, iso(now)),
                    )
                else:  # the owner read in the same statement: nothing can change it in between
                    conn.execute(
                        "INSERT INTO tool_allow_rules (owner, tool, since) SELECT owner, ?, ? FROM conversations "
                        "WHERE id = ? ON CONFLICT DO NOTHING",
                        (tool, iso(now), conversation_id),
                    )

        await self._writer.run(write)

    async def always_allowed(self, owner: str = BOOTSTRAP_ID) -> Sequence[AllowRule]:
        rows = await self._reader.run(
            fetchall, "SELECT tool, since FROM tool_allow_rules WHERE owner = ? ORDER BY tool", (owner,)
        )
        return [AllowRule(r[0], datetime.fromisoformat(r[1])) for r in rows]

    async def rules_for(self, conversation_id: str) -> Sequence[AllowRule]:
        rows = await self._reader.run(
            fetchall,
            "SELECT r.tool, r.since FROM tool_allow_rules r JOIN conversations c "
            "ON c.owner = r.owner WHERE c.id = ? ORDER BY r.tool",
            (conversation_id,),
        )
        return [AllowRule(r[0], datetime.fromisoformat(r[1])) for r in rows]

    async def give_rules(self, from_owner: str, to_owner: str) -> int:
        def write(conn: sqlite3.Connection) -> int:
            with transaction(conn):
                conn.execute(
                    "INSERT INTO tool_allow_rules (owner, tool, since) SELECT ?, tool, since FROM tool_allow_rules "
                    "WHERE owner = ? ON CONFLICT DO NOTHING",
                    (to_owner, from_owner),
                )
                return conn.execute("DELETE FROM tool_allow_rules WHERE owner = ?", (from_owner,)).rowcount

        return await self._writer.run(write)

    async def revoke(self, tool: str, owner: str = BOOTSTRAP_ID) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            with transaction(conn):
                return conn.execute("DELETE FROM tool_allow_rules WHERE owner = ? AND tool = ?", (owner, tool)).rowcount > 0

        return await self._writer.run(write)
