"""`sophos repl` (`sophos chat -i`): a prompt loop on one conversation. Ctrl-C stops the
answer being written (or clears the prompt), Ctrl-D leaves."""

from __future__ import annotations

import asyncio
import signal

import click

from domain.errors import SophosError
from entrypoints.cli import asking
from entrypoints.cli.base import (
    EXIT_BAD_INPUT,
    Context,
    fail,
    finish,
    global_options,
    pass_ctx,
    server_option,
)
from entrypoints.cli.client import Json, RemoteError, SophosClient, Stopper
from entrypoints.cli.hints import for_cli
from entrypoints.cli.output import Printer
from entrypoints.cli.runs import resume_body, waiting_calls

PROMPT = "> "
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


async def _decide(client: SophosClient, cid: str, printer: Printer, turn: list[Stopper]) -> None:
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
            await _turn(client, resume_body(cid, decisions), printer, turn)
        except (SophosError, RemoteError) as e:
            failure = fail(e)
            failure.show()
            if failure.exit_code != EXIT_BAD_INPUT:  # edited arguments the tool refuses: ask again
                return
            printer.status = "waiting"
            continue
        _turn_report(printer)


async def _turn(client: SophosClient, body: Json, printer: Printer, turn: list[Stopper]) -> tuple[str, str]:
    """One answer; `turn` holds its stopper while it is being written (for Ctrl-C)."""
    stopper = Stopper()
    turn.append(stopper)
    try:
        return await client.run(body, printer, stopper)
    finally:
        turn.clear()
        printer.spinner.close()


def _goodbye(cid: str | None, ctx: Context, server: str | None = None) -> int:
    click.echo("", err=True)
    if cid:
        where = f" --server {server}" if server else ctx.hint_options()
        click.echo(f"conversation: {cid}  (continue with: sophos repl -c {cid}{where})", err=True)
    return 0


async def _loop(ctx: Context, client: SophosClient, conversation: str | None, server: str | None) -> int:
    from domain.lifecycle import StopReason

    loop = asyncio.get_running_loop()
    turn: list[Stopper] = []  # the answer being written, if any

    def interrupt() -> None:
        if turn:
            turn[0](StopReason.CANCEL)
        else:  # at the prompt: the terminal dropped the line; show a fresh prompt
            click.echo(f"\n{PROMPT}", nl=False)

    loop.add_signal_handler(signal.SIGINT, interrupt)
    cid = conversation
    try:
        while True:
            try:
                line = await loop.run_in_executor(None, input, PROMPT)
            except EOFError:
                return _goodbye(cid, ctx, server)
            if not line.strip():
                continue
            printer = Printer(as_json=False)
            body: Json = {"message": line, **({"conversation": cid} if cid else {})}
            try:
                cid, _ = await _turn(client, body, printer, turn)
            except (SophosError, RemoteError) as e:
                fail(e).show()
                continue
            _turn_report(printer)
            await _decide(client, cid, printer, turn)
    finally:
        loop.remove_signal_handler(signal.SIGINT)


def repl_loop(ctx: Context, conversation: str | None, server: str | None) -> int:
    return ctx.with_client(lambda client: _loop(ctx, client, conversation, server), server)


@click.command()
@click.option("-c", "--conversation", help="Continue this conversation.")
@server_option
@global_options
@pass_ctx
def repl(ctx: Context, conversation: str | None, server: str | None) -> None:
    """A prompt loop on one conversation: Ctrl-C stops the answer, Ctrl-D leaves."""
    finish(repl_loop(ctx, conversation, server))
