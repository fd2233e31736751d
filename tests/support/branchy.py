"""A long conversation with branches, driven through the real use cases on a real file
(the storage benchmark and the retention test)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from domain.commands import start_command
from domain.model import Message
from tests.support.long_thread import TEXT, file_size, long_thread_harness

TURN = 4  # messages a turn adds: the question, a tool call, its result, the answer


@dataclass
class Branchy:
    cid: str = ""
    size: int = 0
    left: dict[int, tuple[Message, ...]] = field(default_factory=dict)  # branch -> its messages when left
    switch_ms: list[float] = field(default_factory=list)


async def branchy_thread(db: Path, turns: int, branches: int, keep: int = 3) -> Branchy:
    """`turns` turns; `branches` times, spread evenly, the last question is edited and the
    conversation goes on from the edit (each edit leaves a branch with one turn of its own).
    Then every branch is switched to once, and back to the last. With `branches` 0, the
    same conversation without branches."""
    h, saver, repo = long_thread_harness(db, turns + branches, keep=keep)
    out = Branchy()
    every = turns // branches if branches else turns + 1
    cid: str | None = None
    try:
        for i in range(1, turns + 1):
            started, _ = await h.send(f"{i} {TEXT}", cid)
            cid = out.cid = started.conversation_id
            if i % every == 0 and len(out.left) < branches:
                detail = await h.conversations.get(cid)
                out.left[detail.active_branch] = detail.messages
                edited = await h.runs.start(start_command(f"{i} edited {TEXT}", cid, edit_of=len(detail.messages) - TURN))
                await h.events_of(edited)
        assert cid is not None
        last = (await h.conversations.get(cid)).active_branch
        for number in [*sorted(out.left), last]:
            t = time.perf_counter()
            await h.conversations.switch_branch(cid, number)
            out.switch_ms.append((time.perf_counter() - t) * 1000)
    finally:
        saver.close()
        repo.close()
    out.size = file_size(db)
    return out
