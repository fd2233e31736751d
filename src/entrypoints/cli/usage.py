"""`sophos usage` and `sophos audit`: the usage report and the audit log, written once for
this machine's database and for a server (`--server`)."""

from __future__ import annotations

import json

import click

from entrypoints.cli.base import Context, options, pass_ctx, server_option
from entrypoints.cli.client import Json


def _usage_line(row: Json) -> str:
    mark = " (estimated)" if row.get("estimated") else ""
    return (
        f"{row['day']}  {row['user']:<20} {row['model']:<24} in {row['inputTokens']:>9}  out {row['outputTokens']:>9}"
        f"  model {row['modelSeconds']:>8.1f}s  tools {row['toolSeconds']:>7.1f}s  calls {row['calls']:>5}{mark}"
    )


@click.command()
@click.option("--from", "first", metavar="YYYY-MM-DD", help="First day, UTC (default: 29 days before --to).")
@click.option("--to", "last", metavar="YYYY-MM-DD", help="Last day, UTC (default: today).")
@click.option("--all", "everyone", is_flag=True, help="Every user's usage (admins).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@server_option
@options()
@pass_ctx
def usage(ctx: Context, first: str | None, last: str | None, everyone: bool, as_json: bool, server: str | None) -> None:
    """Tokens and seconds per user, model and UTC day."""
    rows = ctx.with_client(lambda c: c.usage(first, last, everyone), server)
    if as_json:
        click.echo(json.dumps({"rows": rows}))
        return
    if not rows:
        click.echo("No usage in that range.")
    for row in rows:
        click.echo(_usage_line(row))


@click.command()
@click.option("--since", metavar="DATE", help="From this ISO date or time on (UTC unless it names a zone).")
@click.option("--limit", default=1000, show_default=True, type=click.IntRange(1, 10_000), help="Rows at most.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@server_option
@options()
@pass_ctx
def audit(ctx: Context, since: str | None, limit: int, as_json: bool, server: str | None) -> None:
    """The audit log, oldest first: who did what, when, from where."""
    entries = ctx.with_client(lambda c: c.audit(since, limit), server)
    if as_json:
        click.echo(json.dumps({"entries": entries}))
        return
    if not entries:
        click.echo("The audit log is empty.")
    for e in entries:
        target = f" {e['target']}" if e["target"] else ""
        detail = f" ({e['detail']})" if e["detail"] else ""
        click.echo(f"{e['at']}  {e['actor']:<16} {e['origin']:<22} {e['action']}{target}{detail}")
