"""Conversation ids as a person gives them: the full id, a unique prefix (`c959f4c6`) or
`last` (the most recently updated). Resolved through the client, so `--server` works too."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import click

from domain.errors import InvalidInput
from domain.ids import MAX_MATCHES, MIN_PREFIX, parse_id_prefix
from domain.model import parse_conversation_id
from entrypoints.cli.base import CliError
from entrypoints.cli.client import Json, SophosClient
from entrypoints.cli.exits import EXIT_BAD_INPUT, EXIT_NOT_FOUND

T = TypeVar("T")
LAST = "last"


class AmbiguousId(CliError):
    """Raised when a prefix names several conversations: they are listed under the error."""

    def __init__(self, prefix: str, matches: list[Json]) -> None:
        more = len(matches) > MAX_MATCHES
        shown = matches[:MAX_MATCHES]
        super().__init__(
            "AMBIGUOUS_ID",
            f"{prefix} names {'more than ' if more else ''}{len(shown)} conversations; give more of the id:",
            EXIT_BAD_INPUT,
        )
        self.matches = shown

    def show(self, file: object = None) -> None:
        super().show(file)
        for c in self.matches:
            click.echo(f"  {c['id']}  {c['updatedAt'][:16].replace('T', ' ')}  {c['title']}", err=True)


async def resolve(client: SophosClient, given: str) -> str:
    """The full id that `given` names; a CliError when it names none or several."""
    text = given.strip().lower()
    if text == LAST:
        latest = await client.conversations(1)
        if not latest:
            raise CliError("NOT_FOUND", "there are no conversations yet", EXIT_NOT_FOUND)
        return str(latest[0]["id"])
    try:
        return parse_conversation_id(text)
    except InvalidInput:  # not a whole id: perhaps a prefix
        pass
    try:
        parse_id_prefix(text)
    except InvalidInput:
        raise CliError(
            "BAD_REQUEST",
            f"Invalid Conversation ID: give the id, a unique prefix of it ({MIN_PREFIX} or more hex digits) or {LAST}",
            EXIT_BAD_INPUT,
        ) from None
    matches = await client.find(text)
    if not matches:
        raise CliError("NOT_FOUND", f"no conversation id starts with {text}", EXIT_NOT_FOUND)
    if len(matches) > 1:
        raise AmbiguousId(text, matches)
    return str(matches[0]["id"])


def on(given: str, work: Callable[[SophosClient, str], Awaitable[T]]) -> Callable[[SophosClient], Awaitable[T]]:
    """A command's work on the conversation `given` names, once resolved."""

    async def run(client: SophosClient) -> T:
        return await work(client, await resolve(client, given))

    return run
