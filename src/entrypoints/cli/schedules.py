"""`sophos schedule add|list|pause|resume|delete`: messages sent at times a cron expression
names (or once), on this machine's database or a server (`--server`). A server fires them
(`sophos serve`); a command only changes them."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import click

from entrypoints.cli.base import CliError, Context, options, pass_ctx, server_option
from entrypoints.cli.client import Json, SophosClient
from entrypoints.cli.exits import EXIT_BAD_INPUT, EXIT_NOT_FOUND
from entrypoints.cli.ids import resolve

MIN_PREFIX = 4


@click.group()
def schedule() -> None:
    """Scheduled messages: "every morning at 8", fired by `sophos serve`."""


async def _schedule_id(client: SophosClient, prefix: str) -> str:
    """The schedule whose id starts with `prefix` (at least 4 characters, unambiguous)."""
    if len(prefix) < MIN_PREFIX:
        raise CliError("BAD_REQUEST", f"give at least {MIN_PREFIX} characters of the schedule's id", EXIT_BAD_INPUT)
    found = [s["id"] for s in await client.schedules() if s["id"].startswith(prefix.lower())]
    if not found:
        raise CliError("NOT_FOUND", f"no schedule {prefix} (see sophos schedule list)", EXIT_NOT_FOUND)
    if len(found) > 1:
        raise CliError("BAD_REQUEST", f"{prefix} names {len(found)} schedules: give more of its id", EXIT_BAD_INPUT)
    return str(found[0])


def _line(s: Json) -> str:
    when = s["cron"] if s["cron"] is not None else f"at {s['at']}"
    state = "paused" if not s["enabled"] else f"next {s['nextAt'] or '-'}"
    where = s["conversationId"][:8] if s["conversationId"] else "new"
    sends = f"graph {s['graphId']}" if s.get("graphId") else repr(s["message"][:60])  # a LangGraph cron runs its graph
    return f"{s['id'][:8]}  {when} ({s['tz']})  {state}  in {where}  {sends}"


@schedule.command("add")
@click.argument("cron")
@click.argument("message")
@click.option("-c", "--conversation", metavar="ID", help="Send it in this conversation (default: a new one each time).")
@click.option("--tz", default="UTC", show_default=True, help="The IANA time zone CRON is read in, e.g. Europe/Paris.")
@click.option(
    "--catch-up",
    type=click.Choice(["once", "skip"]),
    default="once",
    show_default=True,
    help="Firings missed while no server ran: run once at start-up, or skip them.",
)
@click.option("--ends", metavar="TIME", help="No firing after this ISO 8601 time (with an offset).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@server_option
@options()
@pass_ctx
def add(
    ctx: Context,
    cron: str,
    message: str,
    conversation: str | None,
    tz: str,
    catch_up: str,
    ends: str | None,
    as_json: bool,
    server: str | None,
) -> None:
    """Send MESSAGE at the times CRON names: 5 fields (minute hour day month weekday), or 6
    with seconds first; e.g. "0 8 * * *" for every day at 8."""

    async def work(client: SophosClient) -> Json:
        body: dict[str, Any] = {"cron": cron, "message": message, "tz": tz, "catchUp": catch_up, "endsAt": ends}
        if conversation is not None:
            body["conversationId"] = await resolve(client, conversation)
        return await client.add_schedule(body)

    made = ctx.with_client(work, server)
    click.echo(json.dumps(made) if as_json else f"scheduled {made['id']}: next {made['nextAt']}")


@schedule.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@server_option
@options()
@pass_ctx
def list_schedules(ctx: Context, as_json: bool, server: str | None) -> None:
    """Your schedules, oldest first."""
    found = ctx.with_client(lambda c: c.schedules(), server)
    if as_json:
        click.echo(json.dumps({"schedules": found}))
        return
    if not found:
        click.echo("No schedules.")
    for s in found:
        click.echo(_line(s))


def _change(ctx: Context, prefix: str, server: str | None, change: Callable[[SophosClient, str], Awaitable[Json | None]]) -> str:
    async def work(client: SophosClient) -> str:
        sid = await _schedule_id(client, prefix)
        await change(client, sid)
        return sid

    return ctx.with_client(work, server)


@schedule.command()
@click.argument("schedule_id", metavar="ID")
@server_option
@options()
@pass_ctx
def pause(ctx: Context, schedule_id: str, server: str | None) -> None:
    """Stop firing the schedule ID (a prefix of its id will do) until it is resumed."""
    sid = _change(ctx, schedule_id, server, lambda c, s: c.edit_schedule(s, {"enabled": False}))
    click.echo(f"paused {sid}")


@schedule.command()
@click.argument("schedule_id", metavar="ID")
@server_option
@options()
@pass_ctx
def resume(ctx: Context, schedule_id: str, server: str | None) -> None:
    """Fire the schedule ID again, from its next time (the paused ones are not caught up)."""
    sid = _change(ctx, schedule_id, server, lambda c, s: c.edit_schedule(s, {"enabled": True}))
    click.echo(f"resumed {sid}")


@schedule.command()
@click.argument("schedule_id", metavar="ID")
@server_option
@options()
@pass_ctx
def delete(ctx: Context, schedule_id: str, server: str | None) -> None:
    """Delete the schedule ID (the runs it started stay)."""
    sid = _change(ctx, schedule_id, server, lambda c, s: c.delete_schedule(s))
    click.echo(f"deleted {sid}")
