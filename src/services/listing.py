"""A page of conversations as a request names it: its size, the title it searches for, and
the opaque cursor after which it starts."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

from domain.errors import InvalidInput
from domain.model import Conversation, parse_conversation_id

MAX_PAGE = 500
MAX_QUERY = 200  # characters of a title search


def encode_cursor(c: Conversation) -> str:
    """Opaque and URL-safe: base64url (unpadded) of `<UTC timestamp>~<id>`."""
    raw = f"{c.updated_at.astimezone(UTC).isoformat()}~{c.id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The position a cursor of encode_cursor names; anything else is InvalidInput."""
    try:
        if not cursor.isascii() or "=" in cursor:
            raise ValueError(cursor)
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        ts, cid = raw.split("~", 1)
        when = datetime.fromisoformat(ts)
        if when.tzinfo is None:
            raise ValueError(ts)
        return when.astimezone(UTC), parse_conversation_id(cid)
    except (ValueError, OverflowError, InvalidInput):
        raise InvalidInput("Invalid cursor") from None


def title_query(query: object) -> str:
    text = query.strip() if isinstance(query, str) else ""
    if len(text) > MAX_QUERY:
        raise InvalidInput(f"q must be at most {MAX_QUERY} characters")
    return text


def page_size(limit: object) -> int:
    if limit is None:
        return 50
    try:
        size = int(str(limit))
    except ValueError:
        raise InvalidInput("limit must be an integer") from None
    if not 1 <= size <= MAX_PAGE:
        raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}")
    return size
