"""Lines the CLI prints about a run besides its answer."""

from __future__ import annotations

from typing import Any


def context_notice(kind: str, d: dict[str, Any]) -> str | None:
    """One line when the model's context shapes what it sees; nothing when all fits."""
    if kind == "truncated":
        return f"\nwarning: {d['message']}"
    if kind == "summary":
        return f"\ncontext: summarized the first {d['covers']} messages for the model (~{d['tokens']} tokens)"
    if not (d["leftOut"] or d["summarized"] or d["shortened"]):
        return None
    parts = [f"{n} {what}" for n, what in ((d["leftOut"], "left out"), (d["summarized"], "summarized"),
                                           (d["shortened"], "tool result(s) shortened")) if n]
    return f"\ncontext: the model sees the last {d['sent']} messages (~{d['tokens']} of {d['budget']} tokens); {', '.join(parts)}"
