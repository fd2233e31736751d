"""Knowledge collections (`#name` in a message attaches one): `knowledge add NAME FILES...`,
`knowledge list [NAME]`, `knowledge remove NAME [FILE]`, on this machine's database or, with
`--server`, a server's (as the user whose token is given)."""

from __future__ import annotations

import json

import click

from domain.attachments import WIDEST_LIMITS
from entrypoints.cli.base import CliError, Context, options, pass_ctx, server_option
from entrypoints.cli.files import _read

MAX_FILES = 32  # a command's files (one request)


@click.group()
def knowledge() -> None:
    """Your document collections; `#NAME` in a message searches one."""


@knowledge.command()
@click.argument("name")
@click.argument("paths", metavar="FILES...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@server_option
@options()
@pass_ctx
def add(ctx: Context, name: str, paths: tuple[str, ...], as_json: bool, server: str | None) -> None:
    """Add FILES (text, Markdown, code, CSV, PDF) to the collection NAME (created if new);
    a file of the same name is replaced and indexed again."""
    if len(paths) > MAX_FILES:
        raise CliError("BAD_REQUEST", f"at most {MAX_FILES} files at a time", 2)
    files = [_read(p, WIDEST_LIMITS.max_bytes) for p in paths]
    added = ctx.with_client(lambda c: c.add_knowledge(name, files), server)
    if as_json:
        click.echo(json.dumps({"files": added}, ensure_ascii=False))
        return
    for a in added:
        how = f"duplicate of {a['sameAs']}, not indexed again" if a["outcome"] == "duplicate" else f"{a['passages']} passages"
        click.echo(f"{a['outcome']}\t{a['name']}\t{how}")


@knowledge.command("list")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@server_option
@options()
@pass_ctx
def list_(ctx: Context, name: str | None, as_json: bool, server: str | None) -> None:
    """Your collections; with NAME, its files."""
    if name is None:
        found = ctx.with_client(lambda c: c.collections(), server)
        if as_json:
            click.echo(json.dumps({"collections": found}, ensure_ascii=False))
            return
        if not found:
            click.echo("No collections.")
        for c in found:
            click.echo(f"#{c['name']}\t{c['files']} files\t{c['passages']} passages")
        return
    files = ctx.with_client(lambda c: c.knowledge_files(name), server)
    if as_json:
        click.echo(json.dumps({"files": files}, ensure_ascii=False))
        return
    for f in files:
        click.echo(f"{f['name']}\t{f['size']} bytes\t{f['passages']} passages\t{f['updatedAt']}")


@knowledge.command()
@click.argument("name")
@click.argument("file", required=False)
@click.option("--yes", is_flag=True, help="Delete a whole collection without asking.")
@server_option
@options()
@pass_ctx
def remove(ctx: Context, name: str, file: str | None, yes: bool, server: str | None) -> None:
    """Delete FILE from the collection NAME, or the whole collection with its files."""
    if file is None and not yes:
        click.confirm(f"Delete the collection #{name} and all its files?", abort=True)
    ctx.with_client(lambda c: c.remove_knowledge(name, file), server)
    click.echo(f"Deleted {file} from #{name}." if file else f"Deleted #{name}.")
