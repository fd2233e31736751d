"""Files to import at a given size, the costly shapes (the import tests and bench/imports.py):
a conversation whose branches all fork near the end of a long one, so each branch's whole
content is nearly all of the messages, in both formats Sophos reads, and the same number of
messages as one plain chain."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

TEXT = "x" * 150  # 20,000 messages of it: a 4 MB file, as in issue 42
T0 = "2026-03-01T08:59:00.000Z"


def _text(i: int) -> str:
    return f"{i} {TEXT}"


def plain_document(messages: int) -> dict[str, Any]:
    """A `sophos.conversation` of one branch."""
    own = [{"role": "user" if i % 2 == 0 else "assistant", "content": _text(i)} for i in range(messages)]
    return {
        "format": "sophos.conversation",
        "version": 1,
        "conversation": {
            "title": "plain",
            "createdAt": T0,
            "updatedAt": T0,
            "activeBranch": 1,
            "branches": [{"number": 1, "parent": None, "fork": 0, "messages": own}],
        },
    }


def late_forks_document(messages: int, branches: int) -> dict[str, Any]:
    """`messages` in all: branch 1 holds all but one per other branch, each other branch
    one answer of its own, forked at branch 1's last message (the last branch active)."""
    doc = plain_document(messages - (branches - 1))
    main = doc["conversation"]["branches"][0]
    fork = len(main["messages"]) - 1
    for n in range(2, branches + 1):
        doc["conversation"]["branches"].append(
            {"number": n, "parent": 1, "fork": fork, "messages": [{"role": "assistant", "content": f"again {n} {TEXT}"}]}
        )
    doc["conversation"].update(title="late forks", activeBranch=branches)
    return doc


def _node(node_id: str, role: str, text: str, parent: str | None, t: float) -> dict[str, Any]:
    return {
        "id": node_id,
        "parent": parent,
        "children": [],
        "message": {
            "id": node_id,
            "author": {"role": role},
            "create_time": t,
            "recipient": "all",
            "metadata": {},
            "content": {"content_type": "text", "parts": [text]},
        },
    }


def late_forks_chatgpt(messages: int, branches: int) -> list[dict[str, Any]]:
    """The same shape as ChatGPT's conversations.json: a chain whose last question was
    answered `branches` times (regenerations); with `branches` 1, a plain chain."""
    main = messages - (branches - 1)
    mapping: dict[str, Any] = {}
    above: str | None = None
    for i in range(main):
        node_id = f"n{i}"
        mapping[node_id] = _node(node_id, "user" if i % 2 == 0 else "assistant", _text(i), above, 1.7e9 + i)
        if above is not None:
            mapping[above]["children"].append(node_id)
        above = node_id
    question = f"n{main - 2}"
    for n in range(2, branches + 1):
        mapping[f"again{n}"] = _node(f"again{n}", "assistant", f"again {n} {TEXT}", question, 1.8e9 + n)
        mapping[question]["children"].append(f"again{n}")
    current = f"again{branches}" if branches > 1 else above
    return [{"title": "late forks", "create_time": 1.7e9, "update_time": 1.8e9, "current_node": current, "mapping": mapping}]


def proc_cpu(pid: int) -> float:
    """utime + stime of a live process (all its threads), from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def import_cpu(container: Any) -> float:
    """The CPU seconds an import can use so far: this process (every thread: the loop, the
    saver's, the build's) and the import worker's process, where the file is read."""
    return time.process_time() + sum(proc_cpu(pid) for pid in container.import_worker().pids())
