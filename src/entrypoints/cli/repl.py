"""`sophos repl` (`sophos chat -i`): a prompt loop on one conversation. Ctrl-C stops the
answer being written (or clears the prompt), Ctrl-D leaves."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import click

from domain.commands import start_command
from domain.errors import InvalidInput, SophosError
from entrypoints.cli import asking
from entrypoints.cli.base import (
    EXIT_BAD_INPUT,
    CliError,
    Context,
    api_token,
    fail,
    finish,
    global_options,
    pass_ctx,
    server_option,
)
from entrypoints.cli.output import Printer
from entrypoints.cli.runs import Start, drive_remote, follow_answer, remote_failure, resume_with
from entrypoints.dto import approval_dto

PROMPT = "> "
STILL_WAITING = "(tool calls wait for approval; a new message is refused until they are answered: sophos approve {cid})"


def _turn_report(printer: Printer) -> None:
    printer.spinner.close()
    click.echo("")
    if printer.error:
        click.echo(f"error: {printer.error['code']}: {printer.error['message']}", err=True)
    elif printer.status in ("cancelled", "interrupted"):
        click.echo("(stopped; the next message continues from here)", err=True)
    elif printer.status == "waiting":
        click.echo("(tool calls wait for approval: decide with `sophos approve` before the next message)", err=True)


async def _decide_local(ctx: Context, service: Any, cid: str, printer: Printer, answering: list[str]) -> None:
    """While the run waits for approval: ask about each call, continue with the answers."""
    while printer.status == "waiting":
        detail = await ctx.services.conversations().get(cid)
        decisions = asking.decide([approval_dto(r) for r in detail.pending_approvals]) if asking.on_terminal(False) else None
        if not decisions:
            click.echo(STILL_WAITING.format(cid=cid), err=True)
            return
        printer = Printer(as_json=False)
        try:
            await follow_answer(service, resume_with(cid, decisions), printer, answering.append)
        except SophosError as e:
            printer.spinner.close()
            fail(e).show()
            if not isinstance(e, InvalidInput):  # edited arguments the tool refuses: ask again
                return
            printer.status = "waiting"
            continue
        finally:
            answering.clear()
        _turn_report(printer)


def _decide_remote(server: str, cid: str, printer: Printer) -> None:
    from entrypoints import remote

    while printer.status == "waiting":
        try:
            calls = remote.conversation(server, cid, api_token()).get("pendingApprovals") or []
        except remote.RemoteError as e:
            remote_failure(e).show()
            return
        decisions = asking.decide(calls) if asking.on_terminal(False) else None
        if not decisions:
            click.echo(STILL_WAITING.format(cid=cid), err=True)
            return
        printer = Printer(as_json=False)
        try:
            drive_remote(server, {"resume": True, "conversation": cid, "decisions": decisions}, printer)
        except CliError as e:
            e.show()
            if e.exit_code != EXIT_BAD_INPUT:
                return
            printer.status = "waiting"
            continue
        _turn_report(printer)


def _goodbye(cid: str | None, ctx: Context, server: str | None = None) -> int:
    click.echo("", err=True)
    if cid:
        where = f" --server {server}" if server else ctx.hint_options()
        click.echo(f"conversation: {cid}  (continue with: sophos repl -c {cid}{where})", err=True)
    return 0


def _starter(message: str, conversation: str | None) -> Start:
    return lambda service: service.start(start_command(message, conversation))


async def _local(ctx: Context, conversation: str | None) -> int:
    from domain.lifecycle import StopReason
    from services.supervisor import Supervisor

    service = ctx.services.runs()
    supervisor = Supervisor(service)
    await supervisor.start()
    loop = asyncio.get_running_loop()
    answering: list[str] = []  # the run being written, if any

    def interrupt() -> None:
        if answering:
            service.stop_local(answering[0], StopReason.CANCEL)
        else:  # at the prompt: the terminal dropped the line; show a fresh prompt
            click.echo(f"\n{PROMPT}", nl=False)

    loop.add_signal_handler(signal.SIGINT, interrupt)
    cid = conversation
    try:
        while True:
            try:
                line = await loop.run_in_executor(None, input, PROMPT)
            except EOFError:
                return _goodbye(cid, ctx)
            if not line.strip():
                continue
            printer = Printer(as_json=False)
            try:
                cid, _ = await follow_answer(service, _starter(line, cid), printer, answering.append)
            except SophosError as e:
                printer.spinner.close()
                fail(e).show()
                continue
            finally:
                answering.clear()
            _turn_report(printer)
            await _decide_local(ctx, service, cid, printer, answering)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await supervisor.close()


def _remote(ctx: Context, server: str, conversation: str | None) -> int:
    cid = conversation
    while True:
        try:
            line = input(PROMPT)
        except EOFError:
            return _goodbye(cid, ctx, server)
        except KeyboardInterrupt:
            click.echo("")
            continue
        if not line.strip():
            continue
        printer = Printer(as_json=False)
        body: dict[str, Any] = {"message": line, **({"conversation": cid} if cid else {})}
        try:
            cid, _ = drive_remote(server, body, printer)
        except CliError as e:
            e.show()
            continue
        _turn_report(printer)
        _decide_remote(server, cid, printer)


def repl_loop(ctx: Context, conversation: str | None, server: str | None) -> int:
    if server:
        return _remote(ctx, server, conversation)
    return ctx.run(lambda: _local(ctx, conversation))


@click.command()
@click.option("-c", "--conversation", help="Continue this conversation.")
@server_option
@global_options
@pass_ctx
def repl(ctx: Context, conversation: str | None, server: str | None) -> None:
    """A prompt loop on one conversation: Ctrl-C stops the answer, Ctrl-D leaves."""
    finish(repl_loop(ctx, conversation, server))
