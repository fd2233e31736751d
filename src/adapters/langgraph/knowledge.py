"""The thread as a model call sends it, with knowledge: a user message that names its
owner's collections (`#name`, domain.knowledge.mentions) is sent with the passages of them
that best answer it (services.knowledge.retrieve), each under its citation, within the files'
share of the budget. Each is built once per message and share (bounded, as FilePrompts),
so a long thread's call searches no collection again."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import NamedTuple

from domain.attachments import with_files
from domain.knowledge import Cited, knowledge_block, mentions
from domain.model import Message, UserMessage
from ports.knowledge import Retriever


class WithKnowledge(NamedTuple):
    thread: tuple[Message, ...]
    cited: tuple[Cited, ...]


class KnowledgePrompts:
    def __init__(self, service: Retriever, owner_of: Callable[[str], Awaitable[str | None]], size: int = 256) -> None:
        self.service = service
        self.owner_of = owner_of
        self.size = size
        self._built: OrderedDict[tuple[int, int], tuple[UserMessage, UserMessage, tuple[Cited, ...]]] = OrderedDict()

    async def expand(self, thread_id: str, thread: Sequence[Message], max_chars: int) -> WithKnowledge:
        if not any(isinstance(m, UserMessage) and "#" in m.content and mentions(m.content) for m in thread):
            return WithKnowledge(tuple(thread), ())
        owner = await self.owner_of(thread_id)
        out: list[Message] = []
        cited: list[Cited] = []
        for m in thread:
            if not isinstance(m, UserMessage) or owner is None or not mentions(m.content):
                out.append(m)
                continue
            key = (id(m), max_chars)
            hit = self._built.get(key)
            if hit is not None and hit[0] is m:
                self._built.move_to_end(key)
            else:
                hit = (m, *await self._with_passages(owner, m, max_chars))
                self._built[key] = hit
                if len(self._built) > self.size:
                    self._built.popitem(last=False)
            out.append(hit[1])
            cited.extend(hit[2])
        return WithKnowledge(tuple(out), tuple(dict.fromkeys(cited)))

    async def _with_passages(self, owner: str, m: UserMessage, max_chars: int) -> tuple[UserMessage, tuple[Cited, ...]]:
        names = await self.service.existing(owner, mentions(m.content))
        if not names:
            return m, ()  # a #word that names no collection of the owner's: a plain word
        query = " ".join(w for w in m.content.split() if not (w.startswith("#") and w[1:].lower() in names))
        chosen = await self.service.retrieve(owner, names, query, max_chars)
        block = knowledge_block(chosen, names)
        return replace(m, content=with_files(m.content, [block])), tuple(
            Cited(c.collection, c.file, c.first, c.last) for c in chosen
        )
