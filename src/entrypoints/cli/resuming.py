"""How a stopped or waiting run is resumed, as several commands say and do it."""

from __future__ import annotations

from entrypoints.cli.base import Context
from entrypoints.cli.client import Json, SophosClient


def resume_hint(ctx: Context, cid: str, server: str | None = None) -> str:
    """The command that resumes this conversation with the options this run used."""
    where = f" --server {server}" if server else ctx.hint_options()
    return f"sophos resume {cid}{where}"


def resume_body(cid: str, decisions: Json) -> Json:
    """A resume of `cid` with the person's decisions on its waiting calls."""
    return {"resume": True, "conversation": cid, "decisions": decisions}


async def waiting_calls(client: SophosClient, cid: str) -> list[Json]:
    calls: list[Json] = (await client.conversation(cid)).get("pendingApprovals") or []
    return calls
