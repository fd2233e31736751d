"""`sophos users`: the users of a shared server and their API tokens (on this machine's
database: the server sees a change at once, from any process)."""

from __future__ import annotations

import json

import click

from domain.principals import ApiToken, Role, User
from entrypoints.cli.base import Context, options, pass_ctx


@click.group()
def users() -> None:
    """Add, list and disable users; issue and revoke their API tokens."""


def _when(value: object) -> str:
    return "-" if value is None else str(value)[:19].replace("T", " ")


def _user_json(user: User, tokens: list[ApiToken]) -> dict[str, object]:
    return {
        "id": user.id, "name": user.name, "role": user.role.value, "disabled": user.disabled,
        "created": user.created_at.isoformat(),
        "tokens": [{"id": t.id, "label": t.label, "created": t.created_at.isoformat(),
                    "lastUsed": t.last_used_at.isoformat() if t.last_used_at else None,
                    "revoked": t.revoked_at.isoformat() if t.revoked_at else None} for t in tokens],
    }


@users.command("add")
@click.argument("name")
@click.option("--admin", is_flag=True, help="Role admin (default: user).")
@click.option("--token/--no-token", "with_token", default=True, show_default=True,
              help="Issue a first API token (shown once).")
@options()
@pass_ctx
def add(ctx: Context, name: str, admin: bool, with_token: bool) -> None:
    """Add a user (and issue a first token, shown once)."""

    async def work() -> None:
        service = ctx.services.users()
        user = await service.add(name, Role.ADMIN if admin else Role.USER)
        click.echo(f"added {user.name} ({user.id}, {user.role.value})")
        if with_token:
            issued = await service.issue_token(user.id, "first")
            click.echo(f"token {issued.record.id}: {issued.token}")
            click.echo("(shown once: keep it now; `sophos users token` issues another)", err=True)

    ctx.run(work)


@users.command("list")
@click.option("--json", "as_json", is_flag=True)
@options()
@pass_ctx
def list_(ctx: Context, as_json: bool) -> None:
    """Every user with their tokens (never the tokens themselves)."""
    rows = ctx.run(lambda: ctx.services.users().list())
    if as_json:
        click.echo(json.dumps([_user_json(u, t) for u, t in rows]))
        return
    for user, tokens in rows:
        state = "disabled" if user.disabled else "enabled"
        click.echo(f"{user.name}  {user.id}  {user.role.value}  {state}  since {_when(user.created_at.isoformat())}")
        for t in tokens:
            status = f"revoked {_when(t.revoked_at.isoformat())}" if t.revoked_at else "active"
            used = _when(t.last_used_at.isoformat() if t.last_used_at else None)
            click.echo(f"  {t.id}  {t.label or '-'}  {status}  last used {used}")


@users.command("disable")
@click.argument("name")
@click.option("--enable", is_flag=True, help="Enable the user again instead.")
@options()
@pass_ctx
def disable(ctx: Context, name: str, enable: bool) -> None:
    """Disable a user: their tokens stop working and their logins end at once."""
    user = ctx.run(lambda: ctx.services.users().set_disabled(name, not enable))
    click.echo(f"{user.name}: {'disabled' if user.disabled else 'enabled'}")


@users.command("token")
@click.argument("name")
@click.option("--label", default="", help="What the token is for (a machine, a script).")
@options()
@pass_ctx
def token(ctx: Context, name: str, label: str) -> None:
    """Issue an API token for a user (shown once)."""
    issued = ctx.run(lambda: ctx.services.users().issue_token(name, label))
    click.echo(f"token {issued.record.id}: {issued.token}")
    click.echo("(shown once: keep it now)", err=True)


@users.command("revoke")
@click.argument("token_id")
@options()
@pass_ctx
def revoke(ctx: Context, token_id: str) -> None:
    """Revoke a token by its id (t_…): it stops working, and its user's logins end."""
    record = ctx.run(lambda: ctx.services.users().revoke(token_id))
    click.echo(f"revoked {record.id}")
