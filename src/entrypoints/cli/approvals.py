"""Deciding on tool calls that wait for approval: `approve`, `approvals list|revoke`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import click

from domain.errors import InvalidInput
from entrypoints.cli.base import (
    CliError,
    Context,
    global_options,
    options,
    pass_ctx,
    server_option,
)
from entrypoints.cli.client import Json, SophosClient
from entrypoints.cli.exits import EXIT_BAD_INPUT, EXIT_CONFLICT
from entrypoints.cli.ids import resolve
from entrypoints.cli.resuming import resume_body
from entrypoints.cli.runs import json_option, run_and_report


def _decision(edit_args: str | None, reason: str | None, always: bool) -> dict[str, Any]:
    if sum((edit_args is not None, reason is not None, always)) > 1:
        raise CliError("BAD_REQUEST", "give at most one of --edit-args, --reject and --always", EXIT_BAD_INPUT)
    if edit_args is not None:
        try:
            args = json.loads(edit_args)
        except ValueError:
            raise CliError("BAD_REQUEST", "--edit-args must be a JSON object, e.g. '{\"amount\": 5}'", EXIT_BAD_INPUT) from None
        if not isinstance(args, dict):
            raise CliError("BAD_REQUEST", "--edit-args must be a JSON object, e.g. '{\"amount\": 5}'", EXIT_BAD_INPUT)
        return {"type": "edit", "args": args}
    if reason is not None:
        return {"type": "reject", "message": reason}
    return {"type": "approve", **({"always": True} if always else {})}


def _decisions(cid: str, calls: Sequence[str], waiting: Sequence[str], decision: dict[str, Any]) -> dict[str, Any]:
    """One decision per named call, or for every waiting call when none is named."""
    chosen = list(calls) or list(waiting)
    if not chosen:
        raise CliError("STALE_DECISION", f"no tool call of {cid} waits for approval (see sophos show {cid})", EXIT_CONFLICT)
    if decision["type"] == "edit" and len(chosen) > 1:
        raise InvalidInput(f"{len(chosen)} tool calls wait: name the one to edit with --call ID")
    return {call_id: decision for call_id in chosen}


@click.command()
@click.argument("conversation")
@click.option(
    "--call", "calls", multiple=True, metavar="ID", help="The tool call to decide on (repeatable); default: every waiting call."
)
@click.option(
    "--edit-args", metavar="JSON", help="Run the call with these arguments instead (checked against the tool's schema)."
)
@click.option("--reject", "reason", metavar="REASON", help="Do not run the call; the model is told REASON.")
@click.option("--always", is_flag=True, help="Approve, and never ask again for this tool (see sophos approvals).")
@json_option
@server_option
@global_options
@pass_ctx
def approve(
    ctx: Context,
    conversation: str,
    calls: tuple[str, ...],
    edit_args: str | None,
    reason: str | None,
    always: bool,
    as_json: bool,
    server: str | None,
) -> None:
    """Approve (or edit, or reject) the tool calls CONVERSATION waits on, and continue it."""
    decision = _decision(edit_args, reason, always)

    async def body(client: SophosClient) -> Json:
        detail = await client.conversation(await resolve(client, conversation))
        waiting = [c["id"] for c in detail.get("pendingApprovals") or []]
        return resume_body(detail["conversation"]["id"], _decisions(detail["conversation"]["id"], calls, waiting, decision))

    run_and_report(ctx, body, as_json, server)


@click.group()
def approvals() -> None:
    """The tools you always allow (the `--always` of `sophos approve`)."""


@approvals.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@server_option
@options()
@pass_ctx
def list_rules(ctx: Context, as_json: bool, server: str | None) -> None:
    """The tools that never ask before running."""
    rules = [(r["tool"], datetime.fromisoformat(r["since"])) for r in ctx.with_client(lambda c: c.allow_rules(), server)]
    if as_json:
        click.echo(json.dumps({"alwaysAllowed": [{"tool": tool, "since": since.isoformat()} for tool, since in rules]}))
        return
    if not rules:
        click.echo("No tool is always allowed.")
    for tool, since in rules:
        click.echo(f"{tool}\tsince {since.astimezone().strftime('%Y-%m-%d %H:%M')}")


@approvals.command()
@click.argument("tool")
@server_option
@options()
@pass_ctx
def revoke(ctx: Context, tool: str, server: str | None) -> None:
    """Ask again before TOOL runs (its name as `sophos approvals list` shows it)."""
    ctx.with_client(lambda client: client.revoke_rule(tool), server)
    click.echo(f"{tool} asks for approval again.")
