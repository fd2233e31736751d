"""The `sophos.user` file (format 1): what a user keeps besides conversations (their store's
items, the agent's memories among them, and their knowledge collections with their files'
passages), a member of the export-all zip (`sophos-user.json`) that an import reads back.
A stored format of its own: its field names stay as they are whatever the API's become.
Read whole and checked (domain.store's and domain.knowledge's rules, with bounds) before
anything is stored."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from domain.errors import InvalidImport, SophosError
from domain.knowledge import MAX_COLLECTIONS, MAX_FILES, Chunk, KnowledgeFile, check_name
from domain.model import iso
from domain.store import PutItem, StoreItem
from services.user_data import CollectionCopy, UserCopy

FORMAT = "sophos.user"
VERSION = 1
MEMBER = "sophos-user.json"  # its name in the export-all zip
MAX_ITEMS = 100_000
MAX_CHUNKS = 200_000


def user_document(copy: UserCopy) -> bytes:
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "items": [
            {
                "namespace": list(i.namespace),
                "key": i.key,
                "value": i.value,
                "createdAt": iso(i.created_at),
                "updatedAt": iso(i.updated_at),
            }
            for i in copy.items
        ],
        "collections": [
            {
                "name": c.name,
                "createdAt": iso(c.created_at),
                "files": [
                    {
                        "name": f.name,
                        "digest": f.digest,
                        "size": f.size,
                        "type": f.media_type,
                        "updatedAt": iso(f.updated_at),
                        "passages": [{"first": p.first, "last": p.last, "text": p.text} for p in chunks],
                    }
                    for f, chunks in c.files
                ],
            }
            for c in copy.collections
        ],
    }
    return json.dumps(doc, ensure_ascii=False).encode()


def is_user_document(data: bytes) -> bool:
    """Whether an import's file is a `sophos.user` one (as user_document writes it: the format first)."""
    return data.lstrip()[:40].replace(b" ", b"").startswith(b'{"format":"sophos.user"')


def split_user_documents(files: Sequence[bytes]) -> tuple[list[bytes], list[bytes]]:
    """An import's files: (the `sophos.user` ones, the conversations' ones)."""
    users = [f for f in files if is_user_document(f)]
    return users, [f for f in files if not is_user_document(f)]


def _time(value: object, what: str) -> datetime:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise InvalidImport(f"{what}: not a time") from None


def _obj(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise InvalidImport(f"{what}: not an object")
    return value


def _list(value: object, what: str, most: int) -> list[Any]:
    if not isinstance(value, list) or len(value) > most:
        raise InvalidImport(f"{what}: not a list of at most {most}")
    return value


def _item(raw: object, what: str) -> StoreItem:
    r = _obj(raw, what)
    ns = tuple(str(n) for n in _list(r.get("namespace"), f"{what}.namespace", 16))
    value = _obj(r.get("value"), f"{what}.value")
    put = PutItem(ns, str(r.get("key")), value)  # checks the namespace, key and value as a put does
    return StoreItem(put.namespace, put.key, put.value, _time(r.get("createdAt"), what), _time(r.get("updatedAt"), what))


def _file(raw: object, what: str, budget: list[int]) -> tuple[KnowledgeFile, tuple[Chunk, ...]]:
    r = _obj(raw, what)
    name = r.get("name")
    if not isinstance(name, str) or not name or len(name) > 255 or any(c in name for c in "/\\\n\0[]"):
        raise InvalidImport(f"{what}: not a file name")
    chunks = []
    for i, p in enumerate(_list(r.get("passages"), f"{what}.passages", MAX_CHUNKS)):
        p = _obj(p, f"{what}.passages[{i}]")
        first, last, text = p.get("first"), p.get("last"), p.get("text")
        if not (isinstance(first, int) and isinstance(last, int) and isinstance(text, str) and 1 <= first <= last):
            raise InvalidImport(f"{what}.passages[{i}]: not a passage")
        chunks.append(Chunk(first, last, text))
    budget[0] -= len(chunks)
    if budget[0] < 0:
        raise InvalidImport(f"the file holds more than {MAX_CHUNKS} passages")
    size = r.get("size")
    file = KnowledgeFile(
        name,
        str(r.get("digest", "")),
        size if isinstance(size, int) else 0,
        str(r.get("type", "text/plain")),
        len(chunks),
        _time(r.get("updatedAt"), what),
    )
    return file, tuple(chunks)


def read_user_document(data: bytes) -> UserCopy:
    try:
        doc = _obj(json.loads(data), "the file")
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise InvalidImport(f"{MEMBER} is not JSON ({type(e).__name__})") from None
    if doc.get("version") != VERSION:
        raise InvalidImport(f"{MEMBER}: version {doc.get('version')!r} is not one this Sophos reads (it reads {VERSION})")
    try:
        items = tuple(_item(r, f"items[{i}]") for i, r in enumerate(_list(doc.get("items", []), "items", MAX_ITEMS)))
        budget = [MAX_CHUNKS]
        collections = []
        for i, raw in enumerate(_list(doc.get("collections", []), "collections", MAX_COLLECTIONS)):
            c = _obj(raw, f"collections[{i}]")
            files = _list(c.get("files", []), f"collections[{i}].files", MAX_FILES)
            copied = tuple(_file(f, f"collections[{i}].files[{j}]", budget) for j, f in enumerate(files))
            collections.append(CollectionCopy(check_name(c.get("name")), _time(c.get("createdAt"), f"collections[{i}]"), copied))
    except InvalidImport:
        raise
    except SophosError as e:
        raise InvalidImport(f"{MEMBER}: {e.message}") from None
    return UserCopy(items, tuple(collections))
