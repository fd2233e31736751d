"""Two harmless tools for the demo backend."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from adapters.memory.toolbox import StaticToolbox
from ports.tools import ToolSpec


async def _clock(args: Mapping[str, Any], key: str) -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


async def _word_count(args: Mapping[str, Any], key: str) -> str:
    return str(len(str(args.get("text", "")).split()))


def demo_toolbox() -> StaticToolbox:
    clock = ToolSpec(
        "demo__clock",
        "The current date and time (UTC).",
        {"type": "object", "properties": {}},
        read_only=True,
        destructive=False,
        idempotent=True,
    )
    count = ToolSpec(
        "demo__word_count",
        "Count the words of a text.",
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        read_only=True,
        destructive=False,
        idempotent=True,
    )
    return StaticToolbox([(clock, _clock), (count, _word_count)], server="demo")
