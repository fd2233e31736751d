"""Reading and managing conversations: `conversations`, `show`, `branch`, `rename`, `delete`."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import datetime

import click

from entrypoints.cli import asking
from entrypoints.cli.base import (
    CliError,
    Context,
    finish,
    options,
    pass_ctx,
    server_option,
)
from entrypoints.cli.client import Json, SophosClient
from entrypoints.cli.exits import EXIT_BAD_INPUT, EXIT_FAILED
from entrypoints.cli.ids import on
from entrypoints.cli.output import ago, approval_line
from entrypoints.cli.resuming import resume_hint


def _table(items: Sequence[Json]) -> str:
    """A header and relative times for a person at a terminal; plain ISO rows for scripts."""

    def status(c: Json) -> str:
        return str(c["status"] or "-")

    if not sys.stdout.isatty():
        return "\n".join(
            f"{c['id']}  {c['updatedAt']}  {c['messageCount']:>4} msgs  {status(c):<11}  {c['title']}" for c in items
        )
    rows = [("ID", "UPDATED", "MSGS", "STATUS", "TITLE")]
    rows += [(c["id"], ago(parse_time(c["updatedAt"])), str(c["messageCount"]), status(c), c["title"]) for c in items]
    width = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join(f"{r[0]:<{width[0]}}  {r[1]:<{width[1]}}  {r[2]:>{width[2]}}  {r[3]:<{width[3]}}  {r[4]}" for r in rows)


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@click.command()
@click.option("-n", "--limit", type=click.IntRange(1, 200), help="Only the N most recently updated.")
@click.option("--json", "as_json", is_flag=True)
@server_option
@options()
@pass_ctx
def conversations(ctx: Context, limit: int | None, as_json: bool, server: str | None) -> None:
    """List conversations, most recently updated first."""
    items = ctx.with_client(lambda client: client.conversations(limit), server)
    if as_json:
        click.echo(json.dumps({"conversations": items}, ensure_ascii=False))
    elif not items:
        click.echo("No conversations yet.")
    else:
        click.echo(_table(items))  # one write, not one per row


@click.command()
@click.argument("conversation")
@click.option("--json", "as_json", is_flag=True)
@server_option
@options("no_reasoning")
@pass_ctx
def show(ctx: Context, conversation: str, as_json: bool, server: str | None) -> None:
    """Show a conversation's messages and whether it can be resumed."""
    d = ctx.with_client(on(conversation, lambda client, cid: client.conversation(cid)), server)
    if as_json:
        click.echo(json.dumps(d, ensure_ascii=False))
        return
    print_detail(ctx, d)


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / (1024 * 1024):.1f} MB"


def print_detail(ctx: Context, d: Json) -> None:
    """A conversation's detail for a person (`sophos show`, the REPL's /show)."""
    c = d["conversation"]
    branches = d["branchCount"] if d["branchCount"] > 1 else 0
    click.echo(
        f"# {c['title']}\n{c['id']} · {c['messageCount']} messages · {c['status'] or 'no runs'}"
        + (f" · branch {d['activeBranch']} of {branches}" if branches else "")
        + (f" · model {c['model']}" if c.get("model") else "")
    )
    if c.get("system"):
        click.echo(f"system: {c['system']}")
    if c.get("error"):
        click.echo(f"error: {c['error']['code']}: {c['error']['message']}")
    view = d["context"]
    for i, dto in enumerate(d["messages"]):
        if view and i == view["sentFrom"] and i > 0:
            click.echo(
                f"\n--- the model no longer sees the messages above (it saw ~{view['tokens']} of {view['budget']} tokens) ---"
            )
        if dto["role"] == "summary":
            click.echo(f"\n[summary of the first {dto['covers']} messages, written for the model]\n{dto['content']}")
        elif dto["role"] == "tool":
            click.echo(f"\n[tool {dto['name']} · {dto['status']}]\n{dto['content']}")
        else:
            by = f" · {dto['model']}" if dto.get("model") else ""
            click.echo(f"\n[{i} {dto['role']}{by}]{_branch_mark(dto.get('branch'))}")
            if dto.get("reasoning") and ctx.show_reasoning:
                took = f"thought for {dto['reasoningSeconds']:g} s" if dto.get("reasoningSeconds") is not None else "thought"
                click.secho(f"({took}) {dto['reasoning'].strip()}", dim=True)
            click.echo(dto["content"])
            for a in dto.get("attachments", []):
                click.echo(f"📎 {a['name']} · {a['type']} · {_size(a['size'])}")
            if dto.get("cut"):
                click.echo("[stopped here: the answer reached MODEL_MAX_TOKENS]")
            for call in dto.get("toolCalls", []):
                click.echo(f"→ {call['name']} {json.dumps(call['args'], ensure_ascii=False)}")
    if d.get("decisionRequired"):
        for p in d["pendingToolCalls"]:
            if p["outcomeUnknown"] and p["unsafe"]:
                click.echo(f"\n! {p['name']} {json.dumps(p['args'], ensure_ascii=False)} may have taken effect")
        click.echo(f"Decide: {resume_hint(ctx, c['id'])} --decision retry   (or --decision skip)")
    elif d.get("pendingApprovals"):
        click.echo("")
        for call in d["pendingApprovals"]:
            click.echo(approval_line(call))
        click.echo(
            f"Decide: {resume_hint(ctx, c['id']).replace('sophos resume', 'sophos approve', 1)} "
            "[--call ID] [--edit-args JSON | --reject REASON | --always]"
        )
    elif d["resumable"]:
        click.echo(f"\nThe last run stopped before it finished. Resume with: {resume_hint(ctx, c['id'])}")


def _branch_mark(marker: Json | None) -> str:
    """` ‹2/3› branches 1 4 7`: this message has alternatives; `sophos branch ID N` shows one."""
    if marker is None:
        return ""
    return f" ‹{marker['index']}/{marker['count']}› branches {' '.join(str(n) for n in marker['branches'])}"


@click.command()
@click.argument("conversation")
@click.argument("number", type=int)
@server_option
@options()
@pass_ctx
def branch(ctx: Context, conversation: str, number: int, server: str | None) -> None:
    """Make branch NUMBER of CONVERSATION the active one (`sophos show` lists them)."""
    d = ctx.with_client(on(conversation, lambda client, cid: client.switch_branch(cid, number)), server)
    click.echo(f"{d['conversation']['id']}: branch {d['activeBranch']} of {d['branchCount']} · {len(d['messages'])} messages")


@click.command()
@click.argument("conversation")
@click.argument("title")
@server_option
@options()
@pass_ctx
def rename(ctx: Context, conversation: str, title: str, server: str | None) -> None:
    """Give CONVERSATION a new TITLE."""
    renamed = ctx.with_client(on(conversation, lambda client, cid: client.rename(cid, title)), server)
    click.echo(f"renamed {renamed['id']}: {renamed['title']}")


@click.command()
@click.argument("conversation")
@click.option("-y", "--yes", is_flag=True, help="Do not ask first (needed when stdin is not a terminal).")
@server_option
@options()
@pass_ctx
def delete(ctx: Context, conversation: str, yes: bool, server: str | None) -> None:
    """Delete CONVERSATION, its runs and every checkpoint of its thread (asks first)."""
    if not yes and not asking.on_terminal(False):
        # nobody can answer the question: a script must say it means it
        raise CliError("BAD_REQUEST", f"not deleting {conversation} without confirmation: add --yes", EXIT_BAD_INPUT)

    async def work(client: SophosClient, cid: str) -> bool:
        if not yes:
            [summary] = [c for c in await client.find(cid) if c["id"] == cid] or [{"title": "?", "messageCount": 0}]
            question = f'Delete "{summary["title"]}" ({cid}, {summary["messageCount"]} messages)?'
            if not click.confirm(question, default=False, err=True):
                return False
        await client.delete(cid)
        click.echo(f"deleted {cid}")
        return True

    if not ctx.with_client(on(conversation, work), server):
        click.echo("not deleted", err=True)
        finish(EXIT_FAILED)
