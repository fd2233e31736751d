"""The `messages` channel's reducer: LangGraph's `add_messages`, without a walk of the whole
thread when an update only appends.

`add_messages` walks the thread several times on each call (ids for messages without one, a
copy, an index of every id) to replace a message whose id comes again. LangGraph calls it twice
a step (once more to route the conditional edge), so on a 200-turn thread it took ~0.7 ms a turn
and grew with the thread. When every message of an update is a plain message (no chunk, no
RemoveMessage) whose id the thread does not hold, `add_messages` returns `left + right`.

To know that without reading every id, each list this reducer returns is remembered (by
identity, bounded LRU) with its *lineage*: the lists made by appending to one another share
one map of message id -> position, where an id seen at two positions is marked -1. For any
remembered list, each of its messages' ids maps to its own position or to -1, so an id is in
the list only if it maps to -1 (then `add_messages` decides) or to a position that holds it.
Anything else (a replacement, a removal, chunks, dicts, a list not remembered) goes to
`add_messages`, and the next append to its result indexes it once.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from typing import Any

from langchain_core.messages import BaseMessage, BaseMessageChunk, RemoveMessage
from langgraph.graph.message import add_messages

UNKNOWN = -1
_plain: dict[type, bool] = {}


def _is_plain(t: type) -> bool:
    ok = _plain.get(t)
    if ok is None:
        ok = _plain[t] = issubclass(t, BaseMessage) and not issubclass(t, (BaseMessageChunk, RemoveMessage))
    return ok


def _record(positions: dict[str, int], message_id: str, at: int) -> None:
    if positions.setdefault(message_id, at) != at:
        positions[message_id] = UNKNOWN


class MessageAppender:
    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._known: OrderedDict[int, tuple[list[Any], int, dict[str, int]]] = OrderedDict()
        self._lock = threading.Lock()  # graphs may also run in threads

    def __call__(self, left: Any, right: Any) -> Any:
        if isinstance(left, list) and isinstance(right, list) and all(map(_is_plain, set(map(type, right)))):
            positions = self._lineage(left)
            if positions is not None and self._only_appends(left, right, positions):
                merged = left + right
                with self._lock:
                    for k, m in enumerate(right):
                        _record(positions, m.id, len(left) + k)
                self._remember(merged, positions)
                return merged
        return add_messages(left, right)

    def _lineage(self, left: list[Any]) -> dict[str, int] | None:
        hit = self._known.get(id(left))
        if hit is not None and hit[0] is left and hit[1] == len(left):
            return hit[2]
        if not all(map(_is_plain, set(map(type, left)))) or any(m.id is None for m in left):
            return None  # add_messages gives ids (in place) and coerces
        positions: dict[str, int] = {}
        for i, m in enumerate(left):
            _record(positions, m.id, i)
        self._remember(left, positions)
        return positions

    @staticmethod
    def _only_appends(left: list[Any], right: list[Any], positions: dict[str, int]) -> bool:
        """No message of `right` is in `left` or twice in `right`. Gives an id to a message
        without one, as add_messages does."""
        seen: set[str] = set()
        for m in right:
            if m.id is None:
                m.id = str(uuid.uuid4())
            at = positions.get(m.id)
            if m.id in seen or at == UNKNOWN or (at is not None and at < len(left) and left[at].id == m.id):
                return False
            seen.add(m.id)
        return True

    def _remember(self, messages: list[Any], positions: dict[str, int]) -> None:
        with self._lock:
            self._known[id(messages)] = (messages, len(messages), positions)
            self._known.move_to_end(id(messages))
            while len(self._known) > self.size:
                self._known.popitem(last=False)


append_messages = MessageAppender()
