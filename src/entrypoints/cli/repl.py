"""`sophos repl` (`sophos chat -i`): a prompt loop on one conversation, with line editing,
a history file, `\"\"\"` for several lines and slash commands (cli/slash.py). Ctrl-C stops the
answer being written (or drops the line being typed), Ctrl-D or /bye leaves.

The prompt is read on the main thread, between turns, so readline owns the terminal and
Ctrl-C at the prompt is a plain KeyboardInterrupt; each turn runs on one event loop kept
for the whole session (asyncio.Runner), so the client's connections and its run
supervisor live across turns."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import click

from domain.errors import SophosError
from entrypoints.cli import asking, slash
from entrypoints.cli.base import Context, fail, finish, global_options, pass_ctx, server_option
from entrypoints.cli.client import Json, RemoteError, SophosClient, Stopper
from entrypoints.cli.exits import EXIT_BAD_INPUT
from entrypoints.cli.hints import for_cli
from entrypoints.cli.ids import LAST, resolve
from entrypoints.cli.lines import LineReader
from entrypoints.cli.output import Printer
from entrypoints.cli.resuming import resume_body, waiting_calls
from entrypoints.cli.typeahead import TypeAhead

HISTORY_FILE = "repl_history"  # beside the database file
STILL_WAITING = "(tool calls wait for approval; a new message is refused until they are answered: sophos approve {cid})"


def _turn_report(printer: Printer) -> None:
    printer.spinner.close()
    click.echo("")
    if printer.error:
        click.echo(f"error: {printer.error['code']}: {for_cli(printer.error['message'])}", err=True)
    elif printer.status in ("cancelled", "interrupted"):
        click.echo("(stopped; the next message continues from here)", err=True)
    elif printer.status == "waiting":
        click.echo("(tool calls wait for approval: decide with `sophos approve` before the next message)", err=True)


class Session(slash.Session):
    """One REPL: its client, the conversation it is on, how it was started (for hints)."""

    def __init__(self, ctx: Context, client: SophosClient, cid: str | None, server: str | None) -> None:
        self.ctx = ctx
        self.client = client
        self.cid = cid
        self.server = server
        # -m/-s (or /model, /system before the first message): sent with the next message
        self.pending: Json = dict(ctx.chat)

    async def send(self, body: Json) -> None:
        """A turn (a message, a retry), then the questions of the calls it waits on."""
        printer = Printer(as_json=False, reasoning=self.ctx.show_reasoning)
        try:
            self.cid, _ = await _turn(self.client, {**body, **self.pending} if "message" in body else body, printer)
        except (SophosError, RemoteError) as e:
            fail(e).show()
            return
        if "message" in body:
            self.pending = {}
        _turn_report(printer)
        await _decide(self.client, self.cid, printer)

    def continue_hint(self) -> str:
        where = f" --server {self.server}" if self.server else self.ctx.hint_options()
        return f"sophos repl -c {self.cid}{where}"


async def _decide(client: SophosClient, cid: str, printer: Printer) -> None:
    """While the run waits for approval: ask about each call, continue with the answers."""
    while printer.status == "waiting":
        try:
            calls = await waiting_calls(client, cid)
        except (SophosError, RemoteError) as e:
            fail(e).show()
            return
        decisions = asking.decide(calls) if asking.on_terminal(False) else None
        if not decisions:
            click.echo(STILL_WAITING.format(cid=cid), err=True)
            return
        printer = Printer(as_json=False)
        try:
            await _turn(client, resume_body(cid, decisions), printer)
        except (SophosError, RemoteError) as e:
            failure = fail(e)
            failure.show()
            if failure.exit_code != EXIT_BAD_INPUT:  # edited arguments the tool refuses: ask again
                return
            printer.status = "waiting"
            continue
        _turn_report(printer)


async def _turn(client: SophosClient, body: Json, printer: Printer) -> tuple[str, str]:
    """One answer, and those of the lines typed while it is written (queued); Ctrl-C while
    it is written stops it (the run stays resumable)."""
    from domain.lifecycle import StopReason

    loop = asyncio.get_running_loop()
    stopper = Stopper()
    typed = TypeAhead(client, printer, printer.reasoning)

    def interrupt() -> None:
        stopper(StopReason.CANCEL)
        typed.stop(StopReason.CANCEL)

    loop.add_signal_handler(signal.SIGINT, interrupt)
    typed.open()
    try:
        return await client.run(body, printer, stopper)
    finally:
        try:
            await typed.close()
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            printer.spinner.close()


def _history(ctx: Context) -> Path | None:
    try:
        return Path(ctx.settings.DATABASE_PATH).expanduser().parent / HISTORY_FILE
    except click.ClickException:  # a bad setting: the REPL works, without a history file
        return None


async def _start(ctx: Context, client: SophosClient, conversation: str | None, server: str | None) -> Session:
    cid = await resolve(client, conversation) if conversation else None
    session = Session(ctx, client, cid, server)
    title = ""
    if cid:
        title = next((c["title"] for c in await client.find(cid) if c["id"] == cid), "")
    on = f"conversation {cid[:8]} ({title})" if cid else "a new conversation"
    where = f" on {server}" if server else ""
    click.echo(f"sophos repl{where} · {on} · /help lists the commands · Ctrl-D leaves", err=True)
    return session


async def _line(session: Session, line: str) -> bool:
    """A command, or a message; False: leave."""
    command = slash.parse(line)
    if command is not None:
        return await slash.run(session, command)
    await session.send({"message": slash.unescape(line), **({"conversation": session.cid} if session.cid else {})})
    return True


def repl_loop(ctx: Context, conversation: str | None, server: str | None) -> int:
    client = ctx.client(server)
    reader = LineReader(_history(ctx))
    with asyncio.Runner() as runner:
        try:
            try:
                session = runner.run(_start(ctx, client, conversation, server))
            except (SophosError, RemoteError) as e:
                raise fail(e) from None
            while True:
                try:
                    line = reader.read()
                except KeyboardInterrupt:  # the line typed so far is dropped
                    click.echo("", err=True)
                    continue
                except EOFError:
                    break
                if not line.strip():
                    continue
                try:
                    if not runner.run(_line(session, line)):
                        break
                except KeyboardInterrupt:  # Ctrl-C outside an answer (a question, a command)
                    click.echo("", err=True)
        finally:
            reader.close()
            runner.run(client.aclose())
    click.echo("", err=True)
    if session.cid:
        click.echo(f"conversation: {session.cid}  (continue with: {session.continue_hint()})", err=True)
    return 0


@click.command()
@click.option("-c", "--conversation", help="Continue this conversation (its id, a unique prefix, or `last`).")
@click.option("--last", is_flag=True, help="Continue the most recently updated conversation (as -c last).")
@server_option
@global_options
@pass_ctx
def repl(ctx: Context, conversation: str | None, last: bool, server: str | None) -> None:
    """A prompt loop on one conversation: Ctrl-C stops the answer, Ctrl-D leaves."""
    finish(repl_loop(ctx, LAST if last else conversation, server))
