"""`sophos search` and `sophos db reindex`: full-text search across conversations
(registered on the group by entrypoints.cli)."""

from __future__ import annotations

import html
import json
import sys

import click

from entrypoints.cli.base import Context, options, pass_ctx, server_option


def _plain(snippet: str, bold: bool) -> str:
    """The API's HTML snippet for a terminal: matches in bold (or «…» when not a tty)."""
    start, end = ("\x1b[1m", "\x1b[0m") if bold else ("«", "»")
    return html.unescape(snippet.replace("<mark>", start).replace("</mark>", end))


@click.command()
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True, help="Results to show.")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
@server_option
@options()
@pass_ctx
def search(ctx: Context, query: str, limit: int, as_json: bool, server: str | None) -> None:
    """Search titles and messages of every conversation: words (any form of each; the last one also
    a prefix, as typed), "a phrase" (exactly), prefix*."""
    page = ctx.with_client(lambda client: client.search(query, limit), server)
    if as_json:
        click.echo(json.dumps(page, ensure_ascii=False))
        return
    if not page["results"]:
        click.echo("No matches.")
    bold = sys.stdout.isatty()
    for r in page["results"]:
        where = "title" if r["messageIndex"] is None else f"#{r['messageIndex']} {r['role']}"
        click.echo(f"{r['conversation']}  {where:<14} {r['title']}\n    {_plain(r['snippet'], bold)}")
    note = _unsearched(page.get("unsearched") or {})
    if note:
        click.echo(f"({note}; `sophos branch ID N` makes one active)")


def _unsearched(unsearched: dict[str, int]) -> str:
    """The inactive branches a search did not look in, as words ("" when there are none)."""
    branches, conversations = unsearched.get("branches", 0), unsearched.get("conversations", 0)
    if not branches:
        return ""
    return (
        f"{branches} inactive branch{'es' if branches > 1 else ''} of {conversations} "
        f"conversation{'s' if conversations > 1 else ''} not searched"
    )


@click.command()
@options()
@pass_ctx
def reindex(ctx: Context) -> None:
    """Rebuild the search index from every conversation's stored thread."""
    count = ctx.run(lambda: ctx.services.search().reindex())
    click.echo(f"indexed {count} entries")
