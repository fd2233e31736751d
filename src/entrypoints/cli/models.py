"""`sophos models`: the models the model server serves, the default marked."""

from __future__ import annotations

import json

import click

from entrypoints.cli.base import Context, finish, options, pass_ctx, server_option
from entrypoints.cli.client import Json
from entrypoints.cli.exits import EXIT_MODEL


def size_text(size: int | None) -> str:
    if size is None:
        return "-"
    return f"{size / 1e9:.1f} GB" if size >= 1e8 else f"{size / 1e6:.0f} MB"


def model_line(m: Json) -> str:
    mark = "*" if m.get("default") else " "
    context = f"{m['context']:,} tokens" if m.get("context") else "-"
    caps = ", ".join(c for c in m.get("capabilities") or [] if c != "completion") or "-"
    return f"{mark} {m['name']:<32} {size_text(m.get('size')):>8}  {context:>14}  {caps}"


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the list as GET /api/models gives it.")
@server_option
@options("backend")
@pass_ctx
def models(ctx: Context, as_json: bool, server: str | None) -> None:
    """List the models the model server serves (* is the default; `-m NAME` picks one)."""
    listed = ctx.with_client(lambda client: client.models(), server)
    if as_json:
        click.echo(json.dumps(listed, ensure_ascii=False))
        return
    for m in listed["models"]:
        click.echo(model_line(m))
    error = listed.get("error")
    if error:
        click.echo(f"error: {error['code']}: {error['message']}", err=True)
        click.echo(f"the default model is {listed['default']}", err=True)
        finish(EXIT_MODEL)
