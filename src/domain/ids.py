"""Conversation ids as a person types them: a unique prefix stands for the whole id."""

from __future__ import annotations

import re

from domain.errors import InvalidInput

MIN_PREFIX = 4  # as git's short ids: fewer characters name too many conversations to be useful
MAX_MATCHES = 10  # candidates listed when a prefix is ambiguous
_PREFIX_RE = re.compile(rf"^[0-9a-f-]{{{MIN_PREFIX},36}}$")


def parse_id_prefix(value: object) -> str:
    """The lower-cased prefix of a conversation id (4 to 36 hex digits and dashes), or
    InvalidInput."""
    text = value.lower() if isinstance(value, str) else ""
    if not _PREFIX_RE.fullmatch(text):
        raise InvalidInput(f"An id prefix is {MIN_PREFIX} to 36 hex digits (and dashes), like c959f4c6")
    return text
