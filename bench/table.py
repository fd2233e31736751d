"""The benchmark table: figure | baseline | sophos | target | met."""

from __future__ import annotations

Row = tuple[str, str, str, str, bool]


def print_table(head: tuple[str, str, str, str], rows: list[Row], met: bool = True) -> None:
    """`met` False: a plain comparison, no target column verdict."""
    cells = [(r[0], r[1], r[2], r[3]) for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    line = " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + (" | met" if met else "")
    print(line)
    print("-" * len(line))
    for c, r in zip(cells, rows, strict=True):
        verdict = f" | {'yes' if r[4] else 'NO'}" if met else ""
        print(" | ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)) + verdict)
