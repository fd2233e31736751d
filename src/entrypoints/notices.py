"""Lines the CLI prints about a run besides its answer."""

from __future__ import annotations

from typing import Any


class ContextNotices:
    """What a run's context events are worth telling a person: one line the first time a
    model call of the run does not see the whole conversation (later calls only move the
    numbers), and every summary written and every warning."""

    def __init__(self) -> None:
        self.noted = False

    def line(self, kind: str, d: dict[str, Any]) -> str | None:
        if kind == "truncated":
            return f"\nwarning: {d['message']}"
        if kind == "summary":
            return f"\ncontext: summarized the first {d['covers']} messages for the model (~{d['tokens']} tokens)"
        if self.noted or not (d["leftOut"] or d["summarized"] or d["shortened"]):
            return None
        self.noted = True
        parts = [
            f"{n} {what}"
            for n, what in (
                (d["leftOut"], "left out"),
                (d["summarized"], "summarized"),
                (d["shortened"], "tool result(s) shortened"),
            )
            if n
        ]
        return (
            f"\ncontext: the model sees the last {d['sent']} messages "
            f"(~{d['tokens']} of {d['budget']} tokens); {', '.join(parts)}"
        )
