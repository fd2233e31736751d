"""Run events as stored rows: consecutive tokens share one row.

A model streams one `token` event per token, and a flush writes what was published since the
last one: a row per token made a 300,000-token answer 300,000 rows (issue 34). A run of
consecutive token ids in one write becomes one row `(last id, PACKED, [texts])` (and a run of
`reasoning` events one `reasonings` row); every other
event keeps its own row under its own id. Ids on the wire stay one per event: reading expands
a packed row back into its tokens, the first at `last id - len(texts) + 1`.

Keying a packed row by its last id keeps the stores' rules as they were: "ids above n" are
the rows with seq > n (a packed row is read when any of its tokens is), the terminal event
goes after the greatest seq, and a write retried after an unknown commit (its tokens merged
with later ones into a longer row) only repeats ids, which reading skips: the same id is
always the same event.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from domain.events import StreamEvent
from ports.events import EventBatch

PACKED = "tokens"  # never a stream event's own name
# a thinking model streams as many `reasoning` events as tokens: packed alike, under a name of their own
PACKS = {"token": PACKED, "reasoning": "reasonings"}
UNPACKS = {packed: name for name, packed in PACKS.items()}
Row = tuple[int, str, Any]  # seq, event name, JSON-encodable data


def pack(batch: EventBatch) -> list[Row]:
    """The rows for one write of a run's events (in any order): runs of consecutive token
    ids packed, everything else as it is."""
    rows: list[Row] = []
    texts: list[str] = []
    kind = ""  # the event name of `texts`
    last = 0

    def close() -> None:
        if len(texts) == 1:
            rows.append((last, kind, texts[0]))
        elif texts:
            rows.append((last, PACKS[kind], list(texts)))
        texts.clear()

    for seq, event in sorted(batch, key=lambda item: item[0]):
        token = event.event in PACKS and isinstance(event.data, str)
        if texts and not (token and event.event == kind and seq == last + 1):
            close()
        if token:
            kind = event.event
            texts.append(event.data)
        else:
            rows.append((seq, event.event, event.data))
        last = seq
    close()
    return rows


def unpack(rows: Iterable[Row], after: int) -> EventBatch:
    """The events with id > after of rows read in seq order, each id once."""
    out: list[tuple[int, StreamEvent]] = []
    last = after
    for seq, name, data in rows:
        if name in UNPACKS and isinstance(data, list):
            for n, text in enumerate(data, start=seq - len(data) + 1):
                if n > last:
                    out.append((n, StreamEvent(UNPACKS[name], text)))
                    last = n
        elif seq > last:
            out.append((seq, StreamEvent(name, data)))
            last = seq
    return tuple(out)
