"""Per-message conversions of a thread's prompt, reused for the run of leading objects it
shares with the last prompt that started the same way.

A prompt is the thread so far plus what came since, as the very same objects from call to
call (ConversionCache, PromptCache), so its conversion only needs work for the new tail. A
lookup per message by identity was still a walk of the whole thread in Python on each model
call (~0.5 µs a message at each of two layers: ~0.4 ms a call at 400 messages); comparing the
leading objects with the last prompt's is one C-level pass.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
U = TypeVar("U")


class PrefixMemo(Generic[T, U]):
    """For recent prompts, found by the identity of the item at `key_at` (the first one a
    thread owns: a shared system message before it would mix threads): the items and what
    each became."""

    def __init__(self, key_at: int = 0, size: int = 128) -> None:
        self.key_at = key_at
        self.size = size
        self._last: OrderedDict[int, tuple[tuple[T, ...], list[U]]] = OrderedDict()
        self._lock = threading.Lock()

    def reuse(self, items: Sequence[T]) -> list[U]:
        """What the leading items shared with the remembered prompt became."""
        if len(items) <= self.key_at:
            return []
        hit = self._last.get(id(items[self.key_at]))
        if hit is None:
            return []
        before, outputs = hit
        n = min(len(before), len(items))
        same = list(map(operator.is_, before[:n], items[:n]))
        k = same.index(False) if False in same else n
        return outputs[:k]

    def remember(self, items: Sequence[T], outputs: Sequence[U]) -> None:
        if len(items) <= self.key_at:
            return
        key = id(items[self.key_at])
        with self._lock:
            self._last[key] = (tuple(items), list(outputs))  # holding the items keeps their ids theirs
            self._last.move_to_end(key)
            while len(self._last) > self.size:
                self._last.popitem(last=False)
