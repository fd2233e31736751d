"""Conversations in and out: `export` (Markdown, the checkpoint JSONL, the full JSON, or
every conversation as a zip) and `import` (those files, or ChatGPT's conversations.json)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from domain.transfer import LIMITS, file_name
from entrypoints.cli.base import CliError, Context, options, pass_ctx, server_option
from entrypoints.cli.client import SophosClient
from entrypoints.cli.conversations import parse_time
from entrypoints.cli.exits import EXIT_BAD_INPUT
from entrypoints.cli.ids import resolve


async def export_content(client: SophosClient, cid: str, fmt: str) -> tuple[str, bytes]:
    """(file name from the title and date, content) of one conversation in `fmt`."""
    if fmt == "json":
        return await client.export_file(cid)
    text = await client.export(cid, fmt)
    [summary] = [c for c in await client.find(cid) if c["id"] == cid] or [{"title": cid, "createdAt": None}]
    created = parse_time(summary["createdAt"]) if summary["createdAt"] else None
    extension = "checkpoints.jsonl" if fmt == "jsonl" else fmt
    name = file_name(summary["title"], created, extension) if created else f"{cid}.{extension}"
    return name, text.encode("utf-8")


def write_file(output: str, name: str, content: bytes) -> None:
    """To `output`, or into it under `name` when it is a directory."""
    path = Path(output)
    if path.is_dir():
        path = path / name
    try:
        path.write_bytes(content)
    except OSError as e:
        raise CliError("BAD_REQUEST", f"cannot write {path}: {e.strerror}", EXIT_BAD_INPUT) from None
    click.echo(f"wrote {path}", err=True)


@click.command()
@click.argument("conversation", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "json", "jsonl"]),
    default="md",
    show_default=True,
    help="md: the active branch to read; json: everything, every branch (what import reads); jsonl: the checkpoint history.",
)
@click.option("--all", "every", is_flag=True, help="Every conversation, as a zip of their JSON (to -o, or a file here).")
@click.option(
    "-o",
    "--output",
    type=click.Path(writable=True),
    help="Write to this file, or into this directory under a name from the title and date.",
)
@server_option
@options()
@pass_ctx
def export(ctx: Context, conversation: str | None, fmt: str, every: bool, output: str | None, server: str | None) -> None:
    """Export a conversation (or --all) as JSON, Markdown or the checkpoint JSONL."""
    if every == (conversation is not None):
        raise CliError("BAD_REQUEST", "give a conversation or --all (not both)", EXIT_BAD_INPUT)

    async def work(client: SophosClient) -> tuple[str, bytes]:
        if conversation is None:
            return await client.export_file(None)
        return await export_content(client, await resolve(client, conversation), fmt)

    name, content = ctx.with_client(work, server)
    if every:
        write_file(output or ".", name, content)
    elif output:
        write_file(output, name, content)
    else:
        click.echo(content.decode("utf-8"), nl=False)


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="Print the new conversations as JSON.")
@server_option
@options()
@pass_ctx
def import_(ctx: Context, file: str, as_json: bool, server: str | None) -> None:
    """Add the conversations of FILE: a Sophos export (one, or the zip of --all) or
    ChatGPT's conversations.json. Each becomes a new conversation; a bad file adds none."""
    try:
        with click.open_file(file, "rb") as f:
            data = f.read(LIMITS.bytes + 1)
    except OSError as e:
        raise CliError("BAD_REQUEST", f"cannot read {file}: {e.strerror}", EXIT_BAD_INPUT) from None
    if len(data) > LIMITS.bytes:
        raise CliError("BAD_REQUEST", f"{file} is larger than {LIMITS.bytes // (1024 * 1024)} MB", EXIT_BAD_INPUT)
    imported = ctx.with_client(lambda client: client.import_file(data), server)
    if as_json:
        click.echo(json.dumps({"conversations": imported}, ensure_ascii=False))
        return
    click.echo(f"imported {len(imported)} conversation(s)", err=True)
    for c in imported:
        click.echo(f"{c['id']}  {c['messageCount']:>4} msgs  {c['title']}")
