"""`sophos db`: inspect and maintain the database (the SQLite file, or PostgreSQL with DATABASE_URL)."""

from __future__ import annotations

import json

import click

from domain.audit import Action
from entrypoints.cli.base import CliError, Context, options, pass_ctx


@click.group()
def db() -> None:
    """Inspect and maintain the database (the SQLite file, or PostgreSQL with DATABASE_URL)."""


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


@db.command()
@click.option("--json", "as_json", is_flag=True)
@options()
@pass_ctx
def stats(ctx: Context, as_json: bool) -> None:
    """Size, counts and the largest threads."""
    s = ctx.call(lambda: ctx.services.storage().stats())
    if as_json:
        from dataclasses import asdict

        click.echo(json.dumps(asdict(s)))
        return
    click.echo(f"{s.path}: {_mb(s.file_bytes)} ({_mb(s.free_bytes)} free inside)")
    click.echo(
        f"conversations {s.conversations}  runs {s.runs}  checkpoints {s.checkpoints} "
        f"(history {s.logged_checkpoints})  pending writes {s.writes}"
    )
    for t in s.largest:
        click.echo(f"  {t.thread_id}  {t.checkpoints} checkpoints  {_mb(t.bytes)}")


@db.command()
@click.option("--keep", type=int, default=None, help="Checkpoints kept per thread (default CHECKPOINT_KEEP).")
@options()
@pass_ctx
def prune(ctx: Context, keep: int | None) -> None:
    """Delete all but the latest checkpoints of every thread (the export history stays)."""
    k = keep if keep is not None else max(ctx.settings.CHECKPOINT_KEEP, 1)
    deleted = ctx.call(lambda: ctx.services.storage().prune(k))
    trail = ctx.services.audit
    if trail is not None:
        ctx.run(lambda: trail().record(Action.DB_PRUNED, "checkpoints", f"{deleted} deleted, the latest {k} kept"))
    click.echo(f"deleted {deleted} checkpoint(s); kept the latest {k} of each thread")


@db.command()
@options()
@pass_ctx
def vacuum(ctx: Context) -> None:
    """Give free space back to the file system."""
    before, after = ctx.call(lambda: ctx.services.storage().vacuum())
    click.echo(f"{_mb(before)} -> {_mb(after)}")


@db.command()
@options()
@pass_ctx
def migrate(ctx: Context) -> None:
    """Bring the schema up to date, then exit (servers also do it when they start)."""
    health = ctx.run(lambda: ctx.services.backend().health())
    if not health.ok:
        raise CliError("STORAGE_FAILURE", health.detail)
    click.echo(f"migrated {health.detail}")
