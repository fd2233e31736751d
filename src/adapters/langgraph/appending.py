"""The `messages` channel's reducer: LangGraph's `add_messages`, made cheaper when an update
only appends.

`add_messages` walks the whole thread several times on each call (ids given to messages
without one, a copy, an index of every id) to replace a message whose id comes again; a turn
calls it several times, so on a 200-turn thread it took ~0.7 ms a turn and grew with it. When
every message of an update is a plain message (no chunk, no RemoveMessage) whose id the thread
does not hold, `add_messages` returns `left + right`: here that case takes one pass over the
thread's ids and returns the same list. Anything else (a replacement, a removal, chunks,
dicts) goes to `add_messages`. Nothing is kept between calls.
"""

from __future__ import annotations

import uuid
from operator import attrgetter
from typing import Any

from langchain_core.messages import BaseMessage, BaseMessageChunk, RemoveMessage
from langgraph.graph.message import add_messages

_plain: dict[type, bool] = {}
_id = attrgetter("id")


def _is_plain(t: type) -> bool:
    ok = _plain.get(t)
    if ok is None:
        ok = _plain[t] = issubclass(t, BaseMessage) and not issubclass(t, (BaseMessageChunk, RemoveMessage))
    return ok


def append_messages(left: Any, right: Any) -> Any:
    if (
        isinstance(left, list)
        and isinstance(right, list)
        and all(map(_is_plain, set(map(type, left))))
        and all(map(_is_plain, set(map(type, right))))
    ):
        held = set(map(_id, left))
        if None in held:  # as add_messages: every message gets an id, in place
            for m in left:
                if m.id is None:
                    m.id = str(uuid.uuid4())
            held = set(map(_id, left))
        for m in right:
            if m.id is None:
                m.id = str(uuid.uuid4())
        added = set(map(_id, right))
        if len(added) == len(right) and held.isdisjoint(added):
            return left + right
    return add_messages(left, right)
