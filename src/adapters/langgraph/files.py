"""Attached files written in the transaction of the message that carries them.

The engine stages a new message's files on the saver before the message is written; the
saver, in the transaction of each write, looks for the staged files the written values
refer to and stores them there (`taken`), so a crash leaves both the message and its files
or neither. A staged file is dropped once a committed write stored it (`stored`). The
backends share this; each writes the rows with its own SQL.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from langchain_core.messages import HumanMessage

from adapters.files.passages import Bm25Passages
from adapters.langchain.messages import FILES_KEY
from domain.attachments import Upload
from domain.context import searched_files, with_attachments
from domain.model import Message, UserMessage
from ports.attachments import AttachmentStore
from ports.passages import PassageRanker


def _digests_of(message: HumanMessage) -> list[str]:
    raw = message.additional_kwargs.get(FILES_KEY)
    return [str(f["digest"]) for f in raw if isinstance(f, dict) and "digest" in f] if isinstance(raw, list) else []


def referenced(values: Iterable[Any]) -> set[str]:
    """The digests of the files the user messages among `values` carry: messages, lists
    of them, or a channel dict holding them (LangGraph's input channel), one level deep."""
    found: set[str] = set()

    def visit(value: Any, depth: int) -> None:
        if isinstance(value, HumanMessage):
            found.update(_digests_of(value))
        elif depth < 3 and isinstance(value, (list, tuple)):
            for item in value:
                visit(item, depth + 1)
        elif depth < 3 and isinstance(value, dict):
            for item in value.values():
                visit(item, depth + 1)

    for v in values:
        visit(v, 0)
    return found


class FileStage:
    """Files waiting for the write of the message that carries them, by thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # staged on the event loop, taken on the saver's thread
        self._files: dict[str, dict[str, Upload]] = {}

    def stage(self, thread_id: str, uploads: Sequence[Upload]) -> None:
        if not uploads:
            return
        with self._lock:
            self._files.setdefault(thread_id, {}).update({u.attachment.digest: u for u in uploads})

    def taken(self, thread_id: str, values: Iterable[Any]) -> list[Upload]:
        """The staged files of `thread_id` that `values` (what a write stores) refer to."""
        with self._lock:
            staged = self._files.get(thread_id)
            if not staged:
                return []
            wanted = referenced(values)
            return [u for d, u in staged.items() if d in wanted]

    def stored(self, thread_id: str, uploads: Sequence[Upload]) -> None:
        """After the commit that stored `uploads`."""
        with self._lock:
            staged = self._files.get(thread_id)
            if staged is None:
                return
            for u in uploads:
                staged.pop(u.attachment.digest, None)
            if not staged:
                del self._files[thread_id]

    def drop(self, thread_id: str) -> None:
        """The run ended: whatever was not written will not be."""
        with self._lock:
            self._files.pop(thread_id, None)


class Expanded(NamedTuple):
    thread: tuple[Message, ...]
    searched: tuple[str, ...]


class FilePrompts:
    """The thread as a model call sends it: user messages with files get their files'
    text and images (domain.context.with_attachments). Each is built once per message and
    share of the budget, and kept (bounded), so a long thread's call reads no file again
    and sends the very same message objects (the Ollama adapter reuses their JSON)."""

    def __init__(self, store: AttachmentStore, size: int = 256, ranker: PassageRanker | None = None) -> None:
        self.store = store
        self.ranker = ranker or Bm25Passages()  # a file too long for its share is searched, not cut
        self.size = size
        self._built: OrderedDict[tuple[int, int], tuple[UserMessage, UserMessage, tuple[str, ...]]] = OrderedDict()

    async def expand(self, thread_id: str, thread: Sequence[Message], max_chars: int) -> Expanded:
        """The thread with its files in its user messages, and the names of the files that
        were searched (too long for their share: their best passages sent)."""
        if not any(isinstance(m, UserMessage) and m.attachments for m in thread):
            return Expanded(tuple(thread), ())
        out: list[Message] = []
        searched: list[str] = []
        for m in thread:
            if not isinstance(m, UserMessage) or not m.attachments:
                out.append(m)
                continue
            key = (id(m), max_chars)
            hit = self._built.get(key)
            if hit is not None and hit[0] is m:
                self._built.move_to_end(key)
            else:
                stored = await self.store.files(thread_id, [a.digest for a in m.attachments])
                hit = (m, with_attachments(m, stored, max_chars, self.ranker.rank), searched_files(m, stored, max_chars))
                self._built[key] = hit
                if len(self._built) > self.size:
                    self._built.popitem(last=False)
            out.append(hit[1])
            searched.extend(hit[2])
        return Expanded(tuple(out), tuple(dict.fromkeys(searched)))
