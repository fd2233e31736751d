"""Driving runs: `chat`, `resume` and `cancel`, on the database file or a running server."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import click

from domain.commands import Cancel, StartRun, start_command
from domain.errors import InvalidInput
from domain.events import StreamEvent
from domain.model import parse_conversation_id
from entrypoints.cli import asking
from entrypoints.cli.base import (
    EXIT_BAD_INPUT,
    EXIT_PIPE,
    EXIT_SERVER,
    CliError,
    Context,
    api_token,
    exit_code_of,
    finish,
    global_options,
    pass_ctx,
    server_option,
)
from entrypoints.cli.output import Printer
from entrypoints.dto import approval_dto

Start = Callable[[Any], Awaitable[Any]]


def resume_hint(ctx: Context, cid: str, server: str | None = None) -> str:
    """The command that resumes this conversation with the options this run used."""
    where = f" --server {server}" if server else ctx.hint_options()
    return f"sophos resume {cid}{where}"


def read_message(message: str | None) -> str:
    """MESSAGE, or stdin when it is `-` or absent and stdin is not a terminal."""
    if message is not None and message != "-":
        return message
    if message is None and sys.stdin.isatty():
        raise CliError("BAD_REQUEST", "a message is required: sophos chat MESSAGE (or pipe one in)", EXIT_BAD_INPUT)
    return sys.stdin.read()


async def follow_answer(service: Any, start: Start, printer: Printer, on_started: Callable[[str], None]) -> tuple[str, str]:
    """Start a run in this process and print its events until it ends; a closed stdout
    stops it as `cancelled`. The outcome is recorded before this returns."""
    from domain.lifecycle import StopReason

    printer.start()
    try:
        started = await start(service)
        on_started(started.run_id)
        events = await service.follow(started.conversation_id, 0)
        if isinstance(events, StreamEvent):  # it ended before we could attach: the durable answer
            printer.event(events.event, events.data)
        else:
            async for _, ev in events:
                closed = printer.pipe_closed
                printer.event(ev.event, ev.data)
                if printer.pipe_closed and not closed:  # nobody reads the answer any more
                    service.stop_local(started.run_id, StopReason.CANCEL)
    finally:
        printer.spinner.close()
    return started.conversation_id, started.run_id


async def drive(ctx: Context, start: Start, printer: Printer) -> tuple[str, str]:
    """One run: Ctrl-C stops it as `cancelled`, SIGTERM as `interrupted`, also when the
    signal comes while the run is being started (it is stopped as soon as it exists)."""
    from domain.lifecycle import StopReason
    from services.supervisor import Supervisor

    service = ctx.services.runs()
    supervisor = Supervisor(service)  # leases, signals, events: no adoption from a CLI
    await supervisor.start()
    loop = asyncio.get_running_loop()
    run: list[str] = []
    stops: list[StopReason] = []

    def stop(reason: StopReason) -> None:
        stops.append(reason)
        if run:
            service.stop_local(run[0], reason)

    def on_started(run_id: str) -> None:
        run.append(run_id)
        if stops:
            service.stop_local(run_id, stops[0])

    loop.add_signal_handler(signal.SIGINT, stop, StopReason.CANCEL)
    loop.add_signal_handler(signal.SIGTERM, stop, StopReason.SHUTDOWN)
    try:
        return await follow_answer(service, start, printer, on_started)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        loop.remove_signal_handler(signal.SIGTERM)
        await supervisor.close()


def drive_remote(server: str, body: dict[str, Any], printer: Printer) -> tuple[str, str]:
    """Be a client of a running server: POST the run, then follow its SSE stream. Ctrl-C
    (or a closed stdout) cancels the run on the server."""
    from entrypoints import remote

    token = api_token()
    printer.start()
    try:
        started, events = remote.follow_run(server, body, token)
    except remote.RemoteError as e:
        printer.spinner.close()
        raise remote_failure(e) from None
    cid, run_id = started["conversation"], started["run"]
    stop = False
    try:
        for event, data in events:
            printer.event(event, data)
            if printer.pipe_closed:
                stop = True
                break
    except KeyboardInterrupt:
        stop = True
    finally:
        printer.spinner.close()
    if stop:
        try:
            status = str(remote.cancel(server, cid, token).get("status", "cancelled"))
            # 202 `running`: the owner stops it at its next step; the person did stop it
            printer.status = "cancelling" if status == "running" else status
        except remote.RemoteError as e:
            if e.code != "NO_ACTIVE_RUN":  # it finished meanwhile: nothing to stop
                click.echo(f"error: could not cancel the run on {server}: {e.code}: {e.message}", err=True)
    return cid, run_id


def command_of(body: dict[str, Any]) -> StartRun:
    """The command a chat body names, as the API reads it (so both refuse the same input)."""
    return start_command(
        body.get("message"), body.get("conversation"), body.get("resume") is True, body.get("decision"),
        edit_of=body.get("editOf"), regenerate=body.get("regenerate") is True, decisions=body.get("decisions"),
    )


def remote_failure(e: Any) -> CliError:
    return CliError(e.code, e.message, EXIT_SERVER if e.code == "UNREACHABLE" else exit_code_of(e.code))


def resume_with(cid: str, decisions: dict[str, Any]) -> Start:
    """A resume of `cid` with the person's decisions on its waiting calls."""
    async def start(service: Any) -> Any:
        return await service.start(start_command(None, cid, True, decisions=decisions))

    return start


async def drive_deciding(ctx: Context, start: Start, printer: Printer, ask: bool) -> tuple[str, str, Printer]:
    """`drive`, then, on a terminal, while the run waits for approval: ask the person about
    each call and continue the run with the answers. Returns the last run's printer."""
    cid, run_id = await drive(ctx, start, printer)
    while ask and printer.status == "waiting" and not printer.pipe_closed:
        detail = await ctx.services.conversations().get(cid)
        decisions = asking.decide([approval_dto(r) for r in detail.pending_approvals])
        if not decisions:
            break
        following = Printer(as_json=False)
        try:
            cid, run_id = await drive(ctx, resume_with(cid, decisions), following)
        except InvalidInput as e:  # edited arguments the tool refuses: say why, ask again
            following.spinner.close()
            click.echo(f"error: {e.code.value}: {e.message}", err=True)
            continue
        printer = following
    return cid, run_id, printer


def remote_deciding(server: str, body: dict[str, Any], printer: Printer, ask: bool) -> tuple[str, str, Printer]:
    """`drive_deciding` as a client of a running server."""
    from entrypoints import remote

    cid, run_id = drive_remote(server, body, printer)
    while ask and printer.status == "waiting" and not printer.pipe_closed:
        try:
            calls = remote.conversation(server, cid, api_token()).get("pendingApprovals") or []
        except remote.RemoteError as e:
            raise remote_failure(e) from None
        decisions = asking.decide(calls)
        if not decisions:
            break
        following = Printer(as_json=False)
        try:
            cid, run_id = drive_remote(server, {"resume": True, "conversation": cid, "decisions": decisions}, following)
        except CliError as e:
            if e.exit_code != EXIT_BAD_INPUT:
                raise
            e.show()
            continue
        printer = following
    return cid, run_id, printer


def run_and_report(ctx: Context, body: dict[str, Any], start: Start, as_json: bool, server: str | None) -> None:
    printer = Printer(as_json)
    ask = asking.on_terminal(as_json)
    if server:
        cid, run_id, printer = remote_deciding(server, body, printer, ask)
    else:
        cid, run_id, printer = ctx.run(lambda: drive_deciding(ctx, start, printer, ask))
    code = printer.report(cid, run_id, resume_hint(ctx, cid, server))
    finish(EXIT_PIPE if printer.pipe_closed else code)


json_option = click.option("--json", "as_json", is_flag=True, help="Print events as JSON lines.")


@click.command()
@click.argument("message", required=False)
@click.option("-c", "--conversation", help="Continue this conversation.")
@click.option("-i", "--interactive", is_flag=True, help="A prompt loop on one conversation (as `sophos repl`).")
@click.option("--edit", "edit_of", type=int, metavar="N",
              help="Replace user message N (as `sophos show` numbers them) with MESSAGE, on a new branch.")
@json_option
@server_option
@global_options
@pass_ctx
def chat(ctx: Context, message: str | None, conversation: str | None, interactive: bool, edit_of: int | None,
         as_json: bool, server: str | None) -> None:
    """Send MESSAGE and stream the answer (tokens, tool calls) as it comes.

    MESSAGE `-` (or none, with a pipe) reads it from stdin."""
    if interactive:
        from entrypoints.cli.repl import repl_loop

        finish(repl_loop(ctx, conversation, server))
    if edit_of is not None and conversation is None:
        raise CliError("BAD_REQUEST", "--edit needs the conversation: sophos chat -c ID --edit N MESSAGE", EXIT_BAD_INPUT)
    text = read_message(message)
    body: dict[str, Any] = {"message": text, **({"conversation": conversation} if conversation else {})}
    if edit_of is not None:
        body["editOf"] = edit_of
    run_and_report(ctx, body, lambda s: s.start(command_of(body)), as_json, server)


@click.command()
@click.argument("conversation")
@json_option
@server_option
@global_options
@pass_ctx
def regenerate(ctx: Context, conversation: str, as_json: bool, server: str | None) -> None:
    """Answer CONVERSATION's last user message again, on a new branch (the earlier answer
    stays on its own: `sophos show` lists them, `sophos branch` switches)."""
    body: dict[str, Any] = {"regenerate": True, "conversation": conversation}
    run_and_report(ctx, body, lambda s: s.start(command_of(body)), as_json, server)


@click.command()
@click.argument("conversation")
@click.option("--decision", type=click.Choice(["retry", "skip"]), help="For a tool call whose outcome is unknown.")
@json_option
@server_option
@global_options
@pass_ctx
def resume(ctx: Context, conversation: str, decision: str | None, as_json: bool, server: str | None) -> None:
    """Continue CONVERSATION from its last checkpoint."""
    body: dict[str, Any] = {"resume": True, "conversation": conversation, **({"decision": decision} if decision else {})}
    run_and_report(ctx, body, lambda s: s.start(command_of(body)), as_json, server)


@click.command()
@click.argument("conversation")
@server_option
@global_options
@pass_ctx
def cancel(ctx: Context, conversation: str, server: str | None) -> None:
    """Stop CONVERSATION's running run, wherever it runs (it stays resumable)."""
    if server:
        from entrypoints import remote

        try:
            result = remote.cancel(server, conversation, api_token())
        except remote.RemoteError as e:
            raise remote_failure(e) from None
        cid, run_id, status = result["conversation"], result["run"], str(result["status"])
    else:
        async def stop() -> Any:
            return await ctx.services.runs().cancel(Cancel(parse_conversation_id(conversation)))

        r = ctx.run(stop)
        cid, run_id, status = r.conversation_id, r.run_id, r.status.value
    click.echo(f"conversation: {cid}  run: {run_id}  status: {status}")
    if status == "running":
        click.echo("the process running it has not stopped it yet; it will at its next step", err=True)
