"""`sophos chat -a PATH`: files read and checked here, so a bad one is one line before
anything is sent; they travel in the chat body as the API's JSON takes them."""

from __future__ import annotations

import base64
import os
import sys
from collections.abc import Sequence
from typing import Any

from domain.attachments import AttachmentLimits, parse_upload
from domain.errors import SophosError
from entrypoints.cli.base import CliError, fail

STDIN = "-"
# what stdin holds, by its first bytes (a pipe has no name to tell)
_MAGIC = ((b"\x89PNG", "stdin.png"), (b"\xff\xd8\xff", "stdin.jpg"), (b"GIF8", "stdin.gif"), (b"%PDF-", "stdin.pdf"))


def _stdin_name(data: bytes) -> str:
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "stdin.webp"
    return next((name for magic, name in _MAGIC if data.startswith(magic)), "stdin.txt")


def _read(path: str, most: int) -> tuple[str, bytes]:
    if path == STDIN:
        data = sys.stdin.buffer.read(most + 1)
        return _stdin_name(data), data
    try:
        if os.path.getsize(path) > most:  # refused before it is read
            return path, b"\0" * (most + 1)
        with open(path, "rb") as f:
            return path, f.read(most + 1)
    except OSError as e:
        raise CliError("BAD_REQUEST", f"{path}: {e.strerror or e}", 2) from None


def attachments(paths: Sequence[str], limits: AttachmentLimits) -> list[dict[str, Any]]:
    """The files as the chat body's `attachments`, each checked as the server checks it
    (`limits`: this machine's settings; a server with other ones checks again)."""
    if list(paths).count(STDIN) > 1:
        raise CliError("BAD_REQUEST", "stdin (-a -) can be attached once", 2)
    try:
        limits.check_count(paths)
        out = []
        for path in paths:
            name, data = _read(path, limits.max_bytes)
            upload = parse_upload(name, None, data, limits)
            out.append(
                {
                    "name": upload.attachment.name,
                    "type": upload.attachment.media_type,
                    "data": base64.b64encode(data).decode("ascii"),
                }
            )
    except SophosError as e:
        raise fail(e) from None
    return out
