"""`sophos users`: the users of a shared server and their API tokens (on this machine's
database: the server sees a change at once, from any process)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING

import click

from domain.principals import ApiToken, Role, User
from entrypoints.cli.base import CliError, Context, options, pass_ctx

if TYPE_CHECKING:
    from services.users import Added, Claimed, UserService


@click.group()
def users() -> None:
    """Add, list, disable and delete users; their API tokens."""


def _when(value: object) -> str:
    return "-" if value is None else str(value)[:19].replace("T", " ")


def _user_json(user: User, tokens: list[ApiToken]) -> dict[str, object]:
    return {
        "id": user.id,
        "name": user.name,
        "role": user.role.value,
        "disabled": user.disabled,
        "created": user.created_at.isoformat(),
        "tokens": [
            {
                "id": t.id,
                "label": t.label,
                "created": t.created_at.isoformat(),
                "lastUsed": t.last_used_at.isoformat() if t.last_used_at else None,
                "revoked": t.revoked_at.isoformat() if t.revoked_at else None,
            }
            for t in tokens
        ],
    }


async def _issue_first(service: UserService, user: User) -> None:
    issued = await service.issue_token(user.id, "first")
    click.echo(f"token {issued.record.id}: {issued.token}")
    click.echo(f"(shown once: keep it now; `sophos users token {user.name}` issues another)", err=True)


def _say_claimed(claimed: Claimed) -> None:
    click.echo(
        f"gave {claimed.user.name} the bootstrap admin's {claimed.conversations} conversation(s) and "
        f"{claimed.rules} always-allow rule(s)"
    )


def _say_what_changed(added: Added) -> None:
    """What a first user, or conversations nobody sees any more, mean for whoever ran the server alone."""
    if added.first:
        click.echo(
            "note: the first user: from now on a server on this database answers only requests with a token "
            "or a login (the page asks for one), within a second",
            err=True,
        )
    if added.unclaimed:
        click.echo(
            f"note: {added.unclaimed} conversation(s) made without a token stay the bootstrap admin's, "
            f"whom no user sees: to keep them, `sophos users claim YOUR_NAME` gives them to you (made an admin "
            f"with a token if needed), or set API_TOKEN on the server and log in with it",
            err=True,
        )


@users.command("add")
@click.argument("name")
@click.option("--admin", is_flag=True, help="Role admin (default: user).")
@click.option(
    "--owner",
    is_flag=True,
    help="The server's owner: an admin who gets the conversations made without a token (as `users claim`).",
)
@click.option("--token/--no-token", "with_token", default=True, show_default=True, help="Issue a first API token (shown once).")
@options()
@pass_ctx
def add(ctx: Context, name: str, admin: bool, owner: bool, with_token: bool) -> None:
    """Add a user (and issue a first token, shown once)."""

    async def work() -> None:
        service = ctx.services.users()
        added = await service.join(name, Role.ADMIN if admin or owner else Role.USER)
        click.echo(f"added {added.user.name} ({added.user.id}, {added.user.role.value})")
        if with_token:
            await _issue_first(service, added.user)
        if owner:
            _say_claimed(await service.claim(added.user.id))
            added = replace(added, unclaimed=0)
        _say_what_changed(added)

    ctx.run(work)


@users.command("claim")
@click.argument("name")
@click.option(
    "--token/--no-token",
    "with_token",
    default=True,
    show_default=True,
    help="Issue a first API token when NAME is made (shown once).",
)
@options()
@pass_ctx
def claim(ctx: Context, name: str, with_token: bool) -> None:
    """Give NAME the conversations made without a token (the bootstrap admin's), making NAME
    an admin first if there is no such user."""

    async def work() -> None:
        service = ctx.services.users()
        claimed = await service.claim(name)
        if claimed.created:
            click.echo(f"added {claimed.user.name} ({claimed.user.id}, {claimed.user.role.value})")
            if with_token:
                await _issue_first(service, claimed.user)
        _say_claimed(claimed)

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


@users.command("delete")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Delete without asking.")
@options()
@pass_ctx
def delete(ctx: Context, name: str, yes: bool) -> None:
    """Delete a user and everything they keep: conversations, schedules, memories and other
    store items, knowledge collections, tokens, settings (the audit log keeps the deletion).
    To keep their data but stop them, `sophos users disable` instead."""
    if not yes:
        click.confirm(f"Delete the user {name} and all their conversations, memories and documents?", abort=True)
    getter = ctx.services.user_deletion
    if getter is None:
        raise CliError("NOT_SUPPORTED", "this database cannot delete users", 1)
    done = ctx.run(lambda: getter().delete(name))
    click.echo(
        f"Deleted {done.name}: {done.conversations} conversations, {done.schedules} schedules, "
        f"{done.items} store items, {done.collections} collections."
    )


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


@users.command("webhook-secret")
@click.argument("name")
@options()
@pass_ctx
def webhook_secret(ctx: Context, name: str) -> None:
    """Show the secret that signs a user's webhook calls (made on first use): a receiver
    checks X-Sophos-Signature, HMAC-SHA256 of the body, with it."""

    async def work() -> str:
        user = await ctx.services.users().get(name)
        return await ctx.services.webhooks().secret(user.principal())

    click.echo(ctx.run(work))
