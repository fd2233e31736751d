"""What the agent remembers about you (MEMORY_BACKEND=store): `memory list`, `memory forget ID`,
on this machine's database or, with `--server`, a server's (as the user whose token is given)."""

from __future__ import annotations

import json
from datetime import datetime

import click

from entrypoints.cli.base import Context, options, pass_ctx, server_option


@click.group()
def memory() -> None:
    """What the agent remembers about you (its memory__remember tool)."""


@memory.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@server_option
@options()
@pass_ctx
def list_memories(ctx: Context, as_json: bool, server: str | None) -> None:
    """Your memories, newest first: id, when, text."""
    found = ctx.with_client(lambda c: c.memories(), server)
    if as_json:
        click.echo(json.dumps({"memories": found}, ensure_ascii=False))
        return
    if not found:
        click.echo("Nothing remembered.")
    for m in found:
        when = datetime.fromisoformat(m["updatedAt"].replace("Z", "+00:00")).astimezone().strftime("%Y-%m-%d %H:%M")
        click.echo(f"{m['id']}\t{when}\t{m['text']}")


@memory.command()
@click.argument("memory_id", metavar="ID")
@server_option
@options()
@pass_ctx
def forget(ctx: Context, memory_id: str, server: str | None) -> None:
    """Forget the memory ID (as `sophos memory list` shows it)."""
    ctx.with_client(lambda client: client.forget_memory(memory_id), server)
    click.echo(f"Forgot {memory_id}.")
