"""The REPL's slash commands. A line that starts with `/` is a command, never a message;
`//` sends a message that starts with `/`. A command is one `@command` function here:
that is where a new one goes (the per-conversation /model and /system, once the
conversation keeps them)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

import click

from domain.errors import SophosError
from entrypoints.cli.base import Context, fail
from entrypoints.cli.client import Json, RemoteError, SophosClient
from entrypoints.cli.lines import QUOTES


class Session(Protocol):
    """What a command may use and change: the REPL's client and its conversation."""

    ctx: Context
    client: SophosClient
    cid: str | None  # None: the next message starts a new conversation

    async def send(self, body: Json) -> None: ...


Handler = Callable[[Session, list[str]], Awaitable[bool]]  # False: leave the REPL


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    summary: str
    handler: Handler


COMMANDS: dict[str, Command] = {}


def command(name: str, usage: str, summary: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        COMMANDS[name] = Command(name, usage, summary, handler)
        return handler

    return register


def parse(line: str) -> tuple[str, list[str]] | None:
    """(name, arguments) of a command line; None for a message."""
    text = line.strip()
    if not text.startswith("/") or text.startswith("//"):
        return None
    name, *args = text[1:].split()
    return name.lower(), args


def unescape(line: str) -> str:
    """The message a line sends: `//…` sends `/…`."""
    return line.lstrip()[1:] if line.lstrip().startswith("//") else line


async def run(session: Session, parsed: tuple[str, list[str]]) -> bool:
    name, args = parsed
    found = COMMANDS.get(name)
    if found is None:
        click.echo(f"unknown command /{name}: /help lists the commands (// sends a message that starts with /)", err=True)
        return True
    try:
        return await found.handler(session, args)
    except (SophosError, RemoteError) as e:
        fail(e).show()
    except click.ClickException as e:
        e.show()
    return True


def _no_conversation(session: Session) -> bool:
    if session.cid is None:
        click.echo("(no conversation yet: your next message starts one)", err=True)
        return True
    return False


@command("help", "/help", "these commands")
async def _help(session: Session, args: list[str]) -> bool:
    width = max(len(c.usage) for c in COMMANDS.values())
    lines = [f"  {c.usage:<{width}}  {c.summary}" for c in COMMANDS.values()]
    lines.append(f"  {QUOTES:<{width}}  begins (and ends) a message of several lines")
    click.echo("\n".join(lines), err=True)
    return True


@command("new", "/new", "start a new conversation (the next message begins it)")
async def _new(session: Session, args: list[str]) -> bool:
    session.cid = None
    click.echo("(a new conversation: your next message starts it)", err=True)
    return True


@command("show", "/show", "the conversation so far, as `sophos show` prints it")
async def _show(session: Session, args: list[str]) -> bool:
    from entrypoints.cli.conversations import print_detail

    if not _no_conversation(session) and session.cid is not None:
        print_detail(session.ctx, await session.client.conversation(session.cid))
    return True


@command("export", "/export [json|md|jsonl] [PATH]", "write the conversation to a file (default: JSON, here)")
async def _export(session: Session, args: list[str]) -> bool:
    from entrypoints.cli.transfer import export_content, write_file

    if _no_conversation(session) or session.cid is None:
        return True
    fmt = args[0] if args and args[0] in ("json", "md", "jsonl") else "json"
    rest = args[1:] if args and args[0] == fmt else args
    name, content = await export_content(session.client, session.cid, fmt)
    write_file(rest[0] if rest else ".", name, content)
    return True


@command("retry", "/retry", "answer the last message again, on a new branch")
async def _retry(session: Session, args: list[str]) -> bool:
    if not _no_conversation(session):
        await session.send({"regenerate": True, "conversation": session.cid})
    return True


@command("bye", "/bye", "leave (as Ctrl-D)")
async def _bye(session: Session, args: list[str]) -> bool:
    return False
