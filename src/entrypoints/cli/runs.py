"""Driving runs: `chat`, `resume` and `cancel`, on the database file or a running server."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import click

from domain.attachments import WIDEST_LIMITS
from domain.errors import SophosError
from entrypoints.cli import asking
from entrypoints.cli.base import (
    CliError,
    Context,
    fail,
    finish,
    global_options,
    options,
    pass_ctx,
    server_option,
)
from entrypoints.cli.client import Json, RemoteError, SophosClient, Stopper
from entrypoints.cli.exits import EXIT_BAD_INPUT, EXIT_PIPE
from entrypoints.cli.files import STDIN, attachments
from entrypoints.cli.ids import LAST, on, resolve
from entrypoints.cli.output import Printer
from entrypoints.cli.resuming import resume_body, resume_hint, waiting_calls


def read_message(message: str | None) -> str:
    """MESSAGE, or stdin when it is `-` or absent and stdin is not a terminal."""
    if message is not None and message != "-":
        return message
    if message is None and sys.stdin.isatty():
        raise CliError("BAD_REQUEST", "a message is required: sophos chat MESSAGE (or pipe one in)", EXIT_BAD_INPUT)
    return sys.stdin.read()


async def drive(client: SophosClient, body: Json, printer: Printer) -> tuple[str, str]:
    """One run: Ctrl-C stops it as `cancelled`; SIGTERM stops a run of this process as
    `interrupted`, also when the signal comes while the run is being started."""
    from domain.lifecycle import StopReason

    loop = asyncio.get_running_loop()
    stopper = Stopper()
    signals = [signal.SIGINT, signal.SIGTERM] if client.in_process else [signal.SIGINT]
    loop.add_signal_handler(signal.SIGINT, stopper, StopReason.CANCEL)
    if client.in_process:
        loop.add_signal_handler(signal.SIGTERM, stopper, StopReason.SHUTDOWN)
    try:
        return await client.run(body, printer, stopper)
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)


async def drive_deciding(client: SophosClient, body: Json, printer: Printer, ask: bool) -> tuple[str, str, Printer]:
    """`drive`, then, on a terminal, while the run waits for approval: ask the person about
    each call and continue the run with the answers. Returns the last run's printer."""
    cid, run_id = await drive(client, body, printer)
    while ask and printer.status == "waiting" and not printer.pipe_closed:
        decisions = asking.decide(await waiting_calls(client, cid))
        if not decisions:
            break
        following = Printer(as_json=False, reasoning=printer.reasoning)
        try:
            cid, run_id = await drive(client, resume_body(cid, decisions), following)
        except (SophosError, RemoteError) as e:
            following.spinner.close()
            failure = fail(e)
            if failure.exit_code != EXIT_BAD_INPUT:
                raise
            failure.show()  # edited arguments the tool refuses: say why, ask again
            continue
        printer = following
    return cid, run_id, printer


def run_and_report(ctx: Context, body: Callable[[SophosClient], Awaitable[Json]], as_json: bool, server: str | None) -> None:
    """Drive the run `body` names (given the client, it may look first), then report it."""
    printer = Printer(as_json, ctx.show_reasoning)
    ask = asking.on_terminal(as_json)

    async def work(client: SophosClient) -> tuple[str, str, Printer]:
        return await drive_deciding(client, await body(client), printer, ask)

    async def chosen(client: SophosClient) -> tuple[str, str, Printer]:
        # -m/-s apply to the conversation from this turn on, as POST /api/chat's model and system do
        return await drive_deciding(client, {**await body(client), **ctx.chat}, printer, ask)

    cid, run_id, printer = ctx.with_client(chosen if ctx.chat else work, server)
    code = printer.report(cid, run_id, resume_hint(ctx, cid, server))
    finish(EXIT_PIPE if printer.pipe_closed else code)


def given(body: Json) -> Callable[[SophosClient], Awaitable[Json]]:
    """The body, its conversation resolved (a prefix, `last`) once the client is open."""

    async def body_of(client: SophosClient) -> Json:
        if "conversation" in body:
            return {**body, "conversation": await resolve(client, body["conversation"])}
        return body

    return body_of


json_option = click.option("--json", "as_json", is_flag=True, help="Print events as JSON lines.")


@click.command()
@click.argument("message", required=False)
@click.option("-c", "--conversation", help="Continue this conversation (its id, a unique prefix, or `last`).")
@click.option("--last", is_flag=True, help="Continue the most recently updated conversation (as -c last).")
@click.option("-i", "--interactive", is_flag=True, help="A prompt loop on one conversation (as `sophos repl`).")
@click.option(
    "--edit",
    "edit_of",
    type=int,
    metavar="N",
    help="Replace user message N (as `sophos show` numbers them) with MESSAGE, on a new branch.",
)
@click.option(
    "-a",
    "--attach",
    "attach",
    multiple=True,
    metavar="PATH",
    help="Attach a file (repeatable; `-` reads it from stdin): text, code, Markdown, CSV, JSON, PDF, or an "
    "image for a model that can see.",
)
@click.option(
    "--queue",
    "multitask",
    flag_value="enqueue",
    help="While the conversation's run works, queue MESSAGE: it is answered when the run completes.",
)
@click.option(
    "--steer",
    "multitask",
    flag_value="interrupt",
    help="While the conversation's run works, steer it: a text answer stops at once (its text kept), a tool call "
    "in flight finishes first; then MESSAGE is answered.",
)
@json_option
@server_option
@global_options
@pass_ctx
def chat(
    ctx: Context,
    message: str | None,
    conversation: str | None,
    last: bool,
    interactive: bool,
    edit_of: int | None,
    multitask: str | None,
    attach: tuple[str, ...],
    as_json: bool,
    server: str | None,
) -> None:
    """Send MESSAGE and stream the answer (tokens, tool calls) as it comes.

    MESSAGE `-` (or none, with a pipe) reads it from stdin; with `-a -`, stdin is the file."""
    conversation = LAST if last else conversation
    if interactive:
        from entrypoints.cli.repl import repl_loop

        finish(repl_loop(ctx, conversation, server))
    if edit_of is not None and conversation is None:
        raise CliError("BAD_REQUEST", "--edit needs the conversation: sophos chat -c ID --edit N MESSAGE", EXIT_BAD_INPUT)
    if multitask is not None and (conversation is None or edit_of is not None):
        raise CliError(
            "BAD_REQUEST", "--queue and --steer need a conversation: sophos chat -c ID --queue MESSAGE", EXIT_BAD_INPUT
        )
    # checked here against this machine's settings; a server checks against its own (and
    # only what no Sophos accepts is refused before it is sent there)
    limits = ctx.settings.attachment_limits if server is None else WIDEST_LIMITS
    files = attachments(attach, limits) if attach else []
    if files and (message is None or message == "-") and (STDIN in attach or sys.stdin.isatty()):
        if message == "-":
            raise CliError("BAD_REQUEST", "stdin is the attached file (-a -): give MESSAGE as an argument", EXIT_BAD_INPUT)
        text = ""  # the files alone
    else:
        text = read_message(message)
    body: dict[str, Any] = {"message": text, **({"conversation": conversation} if conversation else {})}
    if files:
        body["attachments"] = files
    if edit_of is not None:
        body["editOf"] = edit_of
    if multitask is not None:
        body["multitask"] = multitask
    run_and_report(ctx, given(body), as_json, server)


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
    run_and_report(ctx, given(body), as_json, server)


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
    run_and_report(ctx, given(body), as_json, server)


@click.command()
@click.argument("conversation")
@server_option
@options()
@pass_ctx
def cancel(ctx: Context, conversation: str, server: str | None) -> None:
    """Stop CONVERSATION's running run, wherever it runs (it stays resumable)."""
    result = ctx.with_client(on(conversation, lambda client, cid: client.cancel(cid)), server)
    cid, run_id, status = result["conversation"], result["run"], str(result["status"])
    click.echo(f"conversation: {cid}  run: {run_id}  status: {status}")
    if status == "running":
        click.echo("the process running it has not stopped it yet; it will at its next step", err=True)
