"""A file too long for its share of the prompt, searched instead of cut: its text split into
passages of whole lines, the passages that best match the message chosen within the share,
sent in the file's order, under a note that says the file was searched, not read whole.

Pure rules over plain values; the ranking itself (BM25) comes from a port
(ports.passages.PassageRanker), so the rules stay testable with any scores."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

PASSAGE_CHARS = 1200  # about 300 tokens: a paragraph or a screen of code, CSV rows with their context
MIN_PASSAGE_CHARS = 120
NOTE_CHARS = 240  # the note above the passages, about
MAX_PASSAGES = 2000  # a 10 MB file at 1,200 characters a passage is ~8,700: ranked in parts of the file

# (the message, the passages) -> one score each, higher is better; 0 for no match
Rank = Callable[[str, Sequence[str]], Sequence[float]]


@dataclass(frozen=True)
class Passage:
    """Lines [first, last] (1-based) of a file, and their text."""

    first: int
    last: int
    text: str


def split_passages(text: str, size: int = PASSAGE_CHARS) -> list[Passage]:
    """`text` as passages of whole lines of about `size` characters (a longer line is a
    passage of its own, cut at `size`), in order."""
    out: list[Passage] = []
    lines: list[str] = []
    first = used = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if lines and used + len(line) + 1 > size:
            out.append(Passage(first, number - 1, "\n".join(lines)))
            lines, used = [], 0
        if not lines:
            first = number
        lines.append(line[:size])
        used += min(len(line), size) + 1
    if lines:
        out.append(Passage(first, first + len(lines) - 1, "\n".join(lines)))
    return out


@dataclass(frozen=True)
class Searched:
    """What of a file a model call sends: the chosen passages in the file's order, and of how
    many; `matched` False when no passage shares a word with the message (the file's first
    passages are sent then)."""

    passages: tuple[Passage, ...]
    total: int
    matched: bool

    def note(self, name: str, lines: int) -> str:
        spans = ", ".join(f"{p.first}-{p.last}" if p.last > p.first else str(p.first) for p in self.passages)
        how = "the passages that best match the message" if self.matched else "its first passages (none matched the message)"
        return (
            f"[{name} was searched, not read whole: it is too long for the model's context, so this is {how}, "
            f"{len(self.passages)} of {self.total} passages: lines {spans} of {lines}]"
        )

    def block_text(self, name: str, lines: int) -> str:
        """The note, then each passage under its line numbers, "…" where lines are skipped."""
        parts = [self.note(name, lines)]
        after = 0
        for p in self.passages:
            if p.first > after + 1:
                parts.append("…")
            parts.append(p.text)
            after = p.last
        if after < lines:
            parts.append("…")
        return "\n".join(parts)


def search_file(text: str, query: str, max_chars: int, rank: Rank) -> Searched:
    """The passages of `text` that best match `query` within `max_chars` (the note's room
    taken first), in the file's order."""
    room = max_chars - NOTE_CHARS
    # passages small enough that a few fit a small share (a 2,048-token model's is ~1,000 characters)
    passages = split_passages(text, max(min(PASSAGE_CHARS, room // 3), MIN_PASSAGE_CHARS))[:MAX_PASSAGES]
    scores = list(rank(query, [p.text for p in passages])) if query.strip() else [0.0] * len(passages)
    matched = any(s > 0 for s in scores)
    order = sorted(range(len(passages)), key=lambda i: (-scores[i], i)) if matched else list(range(len(passages)))
    chosen: list[int] = []
    for i in order:
        cost = len(passages[i].text) + 2
        if cost <= room:
            chosen.append(i)
            room -= cost
        if room < 80:
            break
    return Searched(tuple(passages[i] for i in sorted(chosen)), len(passages), matched)
