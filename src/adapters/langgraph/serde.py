"""LangGraph's serializer, with each message encoded once, and checkpoints whose messages
are stored apart (adapters.sqlite.message_rows).

A message is encoded for its step's write, then for its row (or, in a checkpoint stored
inline, in every checkpoint that holds it): pydantic's model_dump costs ~10 µs a message.
A message object of a thread does not change once it has an id (LangGraph's reducer only
gives an id to a message that has none, and replaces messages rather than editing them), so
its encoding is kept by object identity and id, and reused byte for byte.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import ormsgpack
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.serde import jsonplus
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from adapters.storage.message_refs import EXT_MESSAGE_REFS, REFS_TYPE, MessageRefs, Row, digest, packed_list


class MessageMemoSerializer(JsonPlusSerializer):
    def __init__(self, size: int = 2_000) -> None:
        # a checkpoint encodes only its new messages now (message_rows): a message is wanted
        # again within its step (its write, then its row), not for the life of its thread
        super().__init__()
        self.size = size
        # id(message) -> (message, its id, its ext value, its digest once asked for)
        self._memo: dict[int, tuple[BaseMessage, str, Any, bytes | None]] = {}
        self._lock = threading.Lock()

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if obj is None or isinstance(obj, (bytes, bytearray)):
            return super().dumps_typed(obj)
        try:
            return "msgpack", self._pack(obj)
        except ormsgpack.MsgpackEncodeError:
            return super().dumps_typed(obj)  # its own fallbacks and errors

    def _pack(self, obj: Any) -> bytes:
        return ormsgpack.packb(obj, default=self._default, option=jsonplus._option)

    def _default(self, obj: Any) -> Any:
        # the hit path takes no lock: a dict read is atomic, and the entry is checked to be
        # this very object
        hit = self._memo.get(id(obj))
        if hit is not None and hit[0] is obj and hit[1] == obj.id:
            return hit[2]
        if not isinstance(obj, BaseMessage) or obj.id is None:
            return jsonplus._msgpack_default(obj)
        encoded = jsonplus._msgpack_default(obj)
        self._remember(obj, encoded, None)
        return encoded

    def _remember(self, obj: BaseMessage, encoded: Any, digested: bytes | None) -> None:
        with self._lock:
            self._memo[id(obj)] = (obj, str(obj.id), encoded, digested)
            if len(self._memo) > self.size:
                del self._memo[next(iter(self._memo))]

    def message_rows(self, messages: Sequence[Any]) -> list[Row] | None:
        """(digest, msgpack) of each message; None if one is not a message with an id
        (such a list stays inline in its checkpoint)."""
        rows = []
        for obj in messages:
            if not isinstance(obj, BaseMessage) or not obj.id:
                return None
            hit = self._memo.get(id(obj))
            known = hit is not None and hit[0] is obj and hit[1] == obj.id
            encoded = hit[2] if hit is not None and known else self._default(obj)
            packed = ormsgpack.packb(encoded, option=jsonplus._option)  # a copy of the ext's bytes
            if hit is not None and known and hit[3] is not None:
                rows.append((hit[3], packed))
                continue
            rows.append((digest(packed), packed))
            self._remember(obj, encoded, rows[-1][0])
        return rows

    def dumps_with_refs(self, checkpoint: Mapping[str, Any], refs: bytes) -> tuple[str, bytes]:
        """The checkpoint with its messages as their digests."""
        values = {**checkpoint["channel_values"], "messages": ormsgpack.Ext(EXT_MESSAGE_REFS, refs)}
        return REFS_TYPE, self._pack({**checkpoint, "channel_values": values})

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        if data[0] == REFS_TYPE:  # the messages stay MessageRefs until resolved
            return ormsgpack.unpackb(data[1], ext_hook=self._refs_hook, option=ormsgpack.OPT_NON_STR_KEYS)
        return super().loads_typed(data)

    def _refs_hook(self, code: int, data: bytes) -> Any:
        return MessageRefs(data) if code == EXT_MESSAGE_REFS else self._unpack_ext_hook(code, data)

    def load_messages(self, refs: bytes, rows: Mapping[bytes, bytes]) -> list[Any]:
        return self.loads_typed(("msgpack", packed_list(refs, rows)))  # type: ignore[no-any-return]
