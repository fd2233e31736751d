"""Export and import files as the CLI and the HTTP API hand them over: one conversation's
JSON, every conversation as a zip of them, and an upload that is either."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from domain.errors import InvalidImport
from domain.model import Conversation
from domain.transfer import LIMITS, ConversationCopy, file_name
from entrypoints.transfer_document import to_document

ZIP_MAGIC = b"PK\x03\x04"


def document_bytes(conversation: Conversation, copy: ConversationCopy) -> bytes:
    doc = to_document(copy, conversation.id)
    return (json.dumps(doc, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def json_name(copy: ConversationCopy) -> str:
    return file_name(copy.title, copy.created_at, "json")


def zip_name(now: datetime) -> str:
    return f"sophos-export-{now.date().isoformat()}.zip"


def export_zip(items: Iterable[tuple[Conversation, ConversationCopy]], extra: Mapping[str, bytes] | None = None) -> bytes:
    """One JSON file per conversation, named from its title and date (numbered when two
    names are the same), and the `extra` files by name (the user's `sophos-user.json`)."""
    out = io.BytesIO()
    taken: set[str] = set(extra or {})
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for conversation, copy in items:
            name = json_name(copy)
            stem, n = name.removesuffix(".json"), 2
            while name in taken:
                name, n = f"{stem}-{n}.json", n + 1
            taken.add(name)
            z.writestr(name, document_bytes(conversation, copy))
        for name, data in (extra or {}).items():
            z.writestr(name, data)
    return out.getvalue()


def upload_files(data: bytes) -> Sequence[bytes]:
    """The JSON files of an upload: the upload itself, or each `.json` member of a zip
    (bounded: the members' count and their uncompressed size, whatever the zip claims)."""
    if not data.startswith(ZIP_MAGIC):
        return [data]
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            members = [m for m in z.infolist() if not m.is_dir() and m.filename.endswith(".json")]
            if len(members) > LIMITS.conversations:
                raise InvalidImport(f"the zip holds more than {LIMITS.conversations} files")
            files: list[bytes] = []
            left = LIMITS.bytes
            for m in members:
                with z.open(m) as f:
                    content = f.read(left + 1)  # never more than the limit, a zip bomb included
                left -= len(content)
                if left < 0:
                    raise InvalidImport(f"the zip's files are larger than {LIMITS.bytes // (1024 * 1024)} MB together")
                files.append(content)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError, OSError) as e:
        raise InvalidImport(f"the zip cannot be read ({e})") from None
    if not files:
        raise InvalidImport("the zip holds no .json file")
    return files
