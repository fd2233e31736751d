"""What the checkpointers store beside each checkpoint, read from it without LangGraph's
classes: the summary row of the checkpoint log, the nodes left to run, and a msgpack
decoder that keeps objects as plain dicts of their fields."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import ormsgpack
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata

from adapters.langchain.messages import to_domain
from adapters.langgraph.keys import RUN_KEY
from adapters.storage import message_log
from adapters.storage.message_refs import EXT_MESSAGE_REFS, REFS_TYPE, MessageRefs, packed_list, resolve


def next_nodes(checkpoint: Checkpoint) -> list[str]:
    """The nodes a checkpoint will run next, read from its channels: a pending trigger
    channel (`__start__`, `branch:to:<node>`) and one entry per pending Send task."""
    values = checkpoint["channel_values"]
    out = ["__start__"] if "__start__" in values else []
    out += sorted(k.removeprefix("branch:to:") for k in values if k.startswith("branch:to:"))
    out += [getattr(task, "node", "?") for task in values.get("__pregel_tasks") or []]
    return out


def input_messages(writes: Sequence[tuple[str, Any]]) -> list[BaseMessage]:
    """The messages a pending input's writes append to the thread."""
    out: list[BaseMessage] = []
    for channel, value in writes:
        if channel == "messages":
            out += [m for m in (value if isinstance(value, list) else [value]) if isinstance(m, BaseMessage)]
    return out


def input_fields(stored: Iterable[tuple[str, bytes]]) -> list[dict[str, Any]]:
    """The messages of a pending input's stored `messages` writes ((type, blob), in order)
    as plain field dicts."""
    out: list[dict[str, Any]] = []
    for type_, blob in stored:
        value = decode_plain(blob) if type_ == "msgpack" else None
        out += [m for m in (value if isinstance(value, list) else [value]) if isinstance(m, dict)]
    return out


def summary_row(checkpoint: Checkpoint, metadata: CheckpointMetadata) -> tuple[Any, ...]:
    messages = checkpoint["channel_values"].get("messages") or []
    last = to_domain(messages[-1]) if messages else None
    return (
        checkpoint["ts"],
        int(metadata.get("step", -1)),
        str(metadata.get("source", "")),
        json.dumps(next_nodes(checkpoint)),
        len(messages),
        message_log.encode(last) if last else None,
        dict(metadata).get(RUN_KEY),
    )


EXT_KW_ARGS, EXT_PYDANTIC_V2 = 2, 5  # LangGraph's msgpack extension codes for objects


def as_plain(code: int, data: bytes) -> Any:
    """msgpack ext hook: objects stay plain dicts of their fields (messages keep `type`)."""
    if code == EXT_MESSAGE_REFS:
        return MessageRefs(data)
    fields = ormsgpack.unpackb(data, ext_hook=as_plain, option=ormsgpack.OPT_NON_STR_KEYS)
    if code in (EXT_KW_ARGS, EXT_PYDANTIC_V2) and isinstance(fields, (list, tuple)) and len(fields) > 2:
        return fields[2]
    return None


def decode_plain(blob: bytes) -> Any:
    return ormsgpack.unpackb(blob, ext_hook=as_plain, option=ormsgpack.OPT_NON_STR_KEYS)


RowsOf = Callable[[MessageRefs], Mapping[bytes, bytes]]


def read_plain(type_: str, blob: bytes, rows_of: RowsOf) -> dict[str, Any] | None:
    """A stored checkpoint of a thread's main graph as plain dicts, its messages read back
    from their rows (`rows_of(refs)`: call it in the read transaction that read the blob).
    None if it is not msgpack."""
    if type_ not in ("msgpack", REFS_TYPE):
        return None
    checkpoint = decode_plain(blob) or {}
    values = checkpoint.get("channel_values") or {}
    resolve(values, lambda refs: decode_plain(packed_list(refs, rows_of(refs))))
    return checkpoint


def plain_list(type_: str, blob: bytes, rows_of: RowsOf) -> list[dict[str, Any]] | None:
    """A stored message list (a channel blob: msgpack, or the digests of its rows) as plain
    field dicts; None if it is neither."""
    if type_ == REFS_TYPE:
        messages = decode_plain(packed_list(blob, rows_of(MessageRefs(blob))))
    elif type_ == "msgpack":
        messages = decode_plain(blob)
    else:
        return None
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else None


def plain_messages(checkpoint: dict[str, Any] | None) -> list[dict[str, Any]]:
    values = (checkpoint or {}).get("channel_values") or {}
    messages = values.get("messages") or []
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
