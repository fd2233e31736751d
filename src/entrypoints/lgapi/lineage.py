"""The checkpoints of a thread's active branch as one chain, its ancestors' included.

Sophos keeps one LangGraph thread per conversation: a branch's first checkpoint follows
the previous head, whatever branch that was. LangGraph's clients find forks from each
state's `parent_checkpoint`, so here a branch's first checkpoint hangs from its parent
branch's last checkpoint at the fork, and the chain runs through the ancestors' checkpoints
that hold only messages the active branch shares (a prefix of its messages)."""

from __future__ import annotations

from collections.abc import Sequence

from domain.branches import Branch
from domain.model import CheckpointSummary


def lineage(log: Sequence[CheckpointSummary], branches: Sequence[Branch], number: int | None = None) -> list[CheckpointSummary]:
    """Branch `number`'s checkpoints (the active branch's when None) and its ancestors' up
    to each fork, oldest first."""
    by_number = {b.number: b for b in branches}
    active = by_number.get(number) if number is not None else next((b for b in branches if b.active), None)
    if active is None:  # never forked: everything is branch 1
        return [c for c in log if c.branch == 1]
    chain: list[list[CheckpointSummary]] = []
    limit: int | None = None  # messages the branch below shares with the one asked for
    branch: Branch | None = active
    seen: set[int] = set()
    while branch is not None and branch.number not in seen:
        seen.add(branch.number)
        own = [c for c in log if c.branch == branch.number and (limit is None or c.message_count <= limit)]
        chain.append(own)
        limit = branch.fork if limit is None else min(limit, branch.fork)
        branch = by_number.get(branch.parent) if branch.parent is not None else None
    return [c for part in reversed(chain) for c in part]
