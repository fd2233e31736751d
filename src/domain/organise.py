"""Organising many chats: the title the model writes after the first answer, pins, the
archive, temporary chats and turn counts, as plain rules over plain values.

- A title is replaced by the model's only while it is a MESSAGE title (the first message's
  line or the placeholder, domain.model.TitleSource); a person's title never is. The
  request is `title_request`; the answer is made a title by `model_title`.
- A pinned conversation is listed apart, first; an archived one leaves the main list and is
  listed in the archive (`Shown`). Neither changes `updated_at`: the order stays by use.
- A temporary conversation is never listed nor searched, and is deleted once its page has
  left it and no run of it is going, or TEMPORARY_IDLE after it was last used (a page that
  never said it left).
- Turns are the user messages of the active branch (`count_turns`): what a person counts,
  where the message count also counts answers, tool calls and their results.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from domain.errors import InvalidInput
from domain.model import TITLE_MAX, AssistantMessage, Message, UserMessage

TEMPORARY_IDLE = timedelta(hours=24)  # a temporary chat nobody used since is deleted
TITLE_WORDS = 6
EXCERPT = 1500  # characters of the first message and of the first answer sent for a title
TITLE_SYSTEM = (
    "You name conversations. Answer with a title of at most 6 words for the conversation "
    "below, in the language of the conversation: no quotes, no final punctuation, nothing else."
)


@dataclass(frozen=True)
class Shown:
    """Which kept conversations a list holds: `archived` and `pinned` True or False keep
    only those that are (or are not); None keeps both. Temporary ones are never listed."""

    archived: bool | None = None
    pinned: bool | None = None

    def keeps(self, pinned: bool, archived: bool) -> bool:
        return (self.archived is None or self.archived == archived) and (self.pinned is None or self.pinned == pinned)


MAIN = Shown(archived=False)  # what GET /api/conversations lists unless asked otherwise
ALL_SHOWN = Shown()  # archived or not, pinned or not


@dataclass(frozen=True)
class Organise:
    """A change of a conversation's place in the lists: only the fields named (not None)."""

    pinned: bool | None = None
    archived: bool | None = None

    @property
    def empty(self) -> bool:
        return self.pinned is None and self.archived is None


def organise_change(fields: Mapping[str, object]) -> Organise:
    """The change named by a request's `pinned` and `archived` fields (booleans)."""
    values: dict[str, bool | None] = {}
    for key in ("pinned", "archived"):
        value = fields.get(key)
        if key in fields and not isinstance(value, bool):
            raise InvalidInput(f"{key} must be true or false")
        values[key] = value if isinstance(value, bool) else None
    return Organise(values["pinned"], values["archived"])


def shown_by(params: Mapping[str, str]) -> Shown:
    """A list request's `archived` and `pinned` parameters ("true" or "false"); the main
    list (not archived, pinned or not) when neither is given."""
    values: dict[str, bool | None] = {}
    for key in ("archived", "pinned"):
        raw = params.get(key)
        if raw is not None and raw not in ("true", "false"):
            raise InvalidInput(f"{key} must be true or false")
        values[key] = None if raw is None else raw == "true"
    archived = values["archived"]
    return Shown(False if archived is None else archived, values["pinned"])


def count_turns(messages: Sequence[Message]) -> int:
    """The turns of a thread: its user messages."""
    return sum(1 for m in messages if isinstance(m, UserMessage))


def _excerpt(text: str) -> str:
    return text if len(text) <= EXCERPT else text[:EXCERPT] + "…"


def title_request(messages: Sequence[Message]) -> tuple[str, str] | None:
    """(system prompt, user message) asking for a title of the conversation from its first
    message and its first answer (each cut to EXCERPT characters); None before there is an
    answer with text."""
    first = next((m for m in messages if isinstance(m, UserMessage)), None)
    answer = next((m for m in messages if isinstance(m, AssistantMessage) and m.content.strip()), None)
    if first is None or answer is None:
        return None
    asked = first.content.strip() or ", ".join(a.name for a in first.attachments) or "(a file)"
    text = f"User: {_excerpt(asked)}\n\nAssistant: {_excerpt(answer.content.strip())}\n\nTitle:"
    return TITLE_SYSTEM, text


def model_title(reply: str) -> str | None:
    """A model's answer to `title_request` as a title: its first non-empty line without
    thinking tags, quotes, a "Title:" label, markup or final punctuation, at most
    TITLE_WORDS + 2 words and TITLE_MAX characters; None when nothing is left."""
    text = reply
    while "<think>" in text and "</think>" in text:  # a model that thinks in its text
        start, end = text.index("<think>"), text.index("</think>")
        text = text[:start] + text[end + len("</think>") :] if start < end else text[end + len("</think>") :]
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = "".join(ch for ch in line if unicodedata.category(ch) not in ("Cc", "Cf"))
    line = line.strip().strip("#*_`").strip()
    if line.lower().startswith("title:"):
        line = line[len("title:") :].strip()
    line = line.strip("\"'“”‘’«»").strip().rstrip(".!?:;,").strip()
    words = line.split()
    if not words:
        return None
    line = " ".join(words[: TITLE_WORDS + 2])
    return line if len(line) <= TITLE_MAX else line[:TITLE_MAX].rstrip() + "…"
