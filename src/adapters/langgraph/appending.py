"""The `messages` channel's reducer: LangGraph's `add_messages`, without its walk of the
whole thread when a step only appends.

`add_messages` indexes every message of the thread by id on each call, to replace a message
whose id comes again: a turn calls it twice, so on a 200-turn thread (400 messages) that was
~0.7 ms a turn and grew with the thread. Here the ids of each list this reducer returned are
kept beside it (by the list's identity, bounded LRU; a list's entry moves to the list
made from it); when every message of an update is a
plain message (no chunk, no RemoveMessage) whose id the thread does not hold yet, the result
is `left + right`, which is what `add_messages` returns then. Anything else (a replacement, a
removal, chunks, dicts, a list this reducer did not return) goes to `add_messages`, whose
result is then indexed for the next call.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from typing import Any

from langchain_core.messages import BaseMessage, BaseMessageChunk, RemoveMessage
from langgraph.graph.message import add_messages

_plain: dict[type, bool] = {}


def _is_plain(t: type) -> bool:
    ok = _plain.get(t)
    if ok is None:
        ok = _plain[t] = issubclass(t, BaseMessage) and not issubclass(t, (BaseMessageChunk, RemoveMessage))
    return ok


class MessageAppender:
    def __init__(self, size: int = 128) -> None:
        self.size = size
        # id(list) -> (the list, its length, the ids of its messages)
        self._known: OrderedDict[int, tuple[list[Any], int, set[str]]] = OrderedDict()
        self._lock = threading.Lock()  # graphs may run in threads

    def __call__(self, left: Any, right: Any) -> Any:
        ids = self._ids(left)
        if ids is not None and isinstance(right, list):
            added = self._appended(right, ids)
            if added is not None:
                merged = left + right
                with self._lock:  # the old list's ids move to the new one: no copy
                    self._known.pop(id(left), None)
                ids.update(added)
                self._remember(merged, ids)
                return merged
        merged = add_messages(left, right)
        if isinstance(merged, list):
            known = self._index(merged)
            if known is not None:
                self._remember(merged, known)
        return merged

    def _ids(self, left: Any) -> set[str] | None:
        if not isinstance(left, list):
            return None
        hit = self._known.get(id(left))
        if hit is not None and hit[0] is left and hit[1] == len(left):
            return hit[2]
        known = self._index(left)
        if known is not None:
            self._remember(left, known)
        return known

    @staticmethod
    def _index(messages: list[Any]) -> set[str] | None:
        """The ids of a list of plain messages that all have distinct ids, else None."""
        if not all(_is_plain(type(m)) and m.id is not None for m in messages):
            return None
        ids = {m.id for m in messages}
        return ids if len(ids) == len(messages) else None

    @staticmethod
    def _appended(right: list[Any], ids: set[str]) -> set[str] | None:
        """The ids of `right` if it only appends plain messages, else None. Gives an id to a
        message without one, as add_messages does."""
        added: set[str] = set()
        for m in right:
            if not _is_plain(type(m)):
                return None
            if m.id is None:
                m.id = str(uuid.uuid4())
            if m.id in ids or m.id in added:
                return None
            added.add(m.id)
        return added

    def _remember(self, messages: list[Any], ids: set[str]) -> None:
        with self._lock:
            self._known[id(messages)] = (messages, len(messages), ids)
            self._known.move_to_end(id(messages))
            while len(self._known) > self.size:
                self._known.popitem(last=False)


append_messages = MessageAppender()
