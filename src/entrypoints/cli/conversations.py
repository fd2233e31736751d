"""Reading and managing conversations: `conversations`, `show`, `export`, `rename`, `delete`."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from domain.branches import BranchMarker
from domain.model import Conversation, iso
from entrypoints.cli.base import (
    EXIT_BAD_INPUT,
    CliError,
    Context,
    api_token,
    global_options,
    pass_ctx,
    server_option,
)
from entrypoints.cli.output import ago, approval_line
from entrypoints.cli.runs import remote_failure, resume_hint
from entrypoints.dto import approval_dto, marker_dto, message_to_dto, summary_dto


async def _recover(ctx: Context) -> None:
    # the full stack (LangGraph, the model client) loads only when there is a run to reclaim
    if await ctx.services.backend().runs().running_runs():
        from services.supervisor import Supervisor

        await Supervisor(ctx.services.runs()).recover()


def _table(items: Sequence[Conversation]) -> str:
    """A header and relative times for a person at a terminal; plain ISO rows for scripts."""
    def status(c: Conversation) -> str:
        return c.status.value if c.status else "-"

    if not sys.stdout.isatty():
        return "\n".join(f"{c.id}  {iso(c.updated_at)}  {c.message_count:>4} msgs  {status(c):<11}  {c.title}" for c in items)
    rows = [("ID", "UPDATED", "MSGS", "STATUS", "TITLE")]
    rows += [(c.id, ago(c.updated_at), str(c.message_count), status(c), c.title) for c in items]
    width = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join(
        f"{r[0]:<{width[0]}}  {r[1]:<{width[1]}}  {r[2]:>{width[2]}}  {r[3]:<{width[3]}}  {r[4]}" for r in rows
    )


@click.command()
@click.option("-n", "--limit", type=click.IntRange(1, 200), help="Only the N most recently updated.")
@click.option("--json", "as_json", is_flag=True)
@global_options
@pass_ctx
def conversations(ctx: Context, limit: int | None, as_json: bool) -> None:
    """List conversations, most recently updated first."""

    async def load() -> Any:
        await _recover(ctx)
        service = ctx.services.conversations()
        return (await service.page(limit)).conversations if limit else await service.list()

    items = ctx.run(load)
    if as_json:
        click.echo(json.dumps({"conversations": [summary_dto(c) for c in items]}, ensure_ascii=False))
    elif not items:
        click.echo("No conversations yet.")
    else:
        click.echo(_table(items))  # one write, not one per row


@click.command()
@click.argument("conversation")
@click.option("--json", "as_json", is_flag=True)
@global_options
@pass_ctx
def show(ctx: Context, conversation: str, as_json: bool) -> None:
    """Show a conversation's messages and whether it can be resumed."""

    async def load() -> Any:
        await _recover(ctx)
        return await ctx.services.conversations().get(conversation)

    d = ctx.run(load)
    markers = d.markers
    if as_json:
        messages = [message_to_dto(m) for m in d.messages]
        for i, marker in markers.items():
            messages[i]["branch"] = marker_dto(marker)
        body = {
            "conversation": summary_dto(d.conversation),
            "messages": messages,
            "resumable": d.resumable,
            "context": d.context.to_dto() if d.context else None,
            "activeBranch": d.active_branch,
            "branchCount": max(1, len(d.branches)),
        }
        if d.pending_calls:
            body["pendingToolCalls"] = [
                {"id": p.call.id, "name": p.call.name, "args": p.call.args, "outcomeUnknown": p.started, "unsafe": p.unsafe}
                for p in d.pending_calls
            ]
            body["decisionRequired"] = d.decision_required
        if d.pending_approvals:
            body["pendingApprovals"] = [approval_dto(r) for r in d.pending_approvals]
        click.echo(json.dumps(body, ensure_ascii=False))
        return
    c = d.conversation
    click.echo(f"# {c.title}\n{c.id} · {c.message_count} messages · {c.status.value if c.status else 'no runs'}"
               + (f" · branch {d.active_branch} of {len(d.branches)}" if d.branches else ""))
    if c.error:
        click.echo(f"error: {c.error.code}: {c.error.message}")
    view = d.context
    for i, m in enumerate(d.messages):
        dto = message_to_dto(m)
        if view and i == view.sent_from and i > 0:
            click.echo(f"\n--- the model no longer sees the messages above (it saw ~{view.tokens} of {view.budget} tokens) ---")
        if dto["role"] == "summary":
            click.echo(f"\n[summary of the first {dto['covers']} messages, written for the model]\n{dto['content']}")
        elif dto["role"] == "tool":
            click.echo(f"\n[tool {dto['name']} · {dto['status']}]\n{dto['content']}")
        else:
            click.echo(f"\n[{i} {dto['role']}]{_branch_mark(markers.get(i))}\n{dto['content']}")
            for call in dto.get("toolCalls", []):
                click.echo(f"→ {call['name']} {json.dumps(call['args'], ensure_ascii=False)}")
    if d.decision_required:
        for p in d.pending_calls:
            if p.needs_decision:
                click.echo(f"\n! {p.call.name} {json.dumps(p.call.args, ensure_ascii=False)} may have taken effect")
        click.echo(f"Decide: {resume_hint(ctx, c.id)} --decision retry   (or --decision skip)")
    elif d.pending_approvals:
        click.echo("")
        for r in d.pending_approvals:
            click.echo(approval_line(approval_dto(r)))
        click.echo(f"Decide: {resume_hint(ctx, c.id).replace('sophos resume', 'sophos approve', 1)} "
                   "[--call ID] [--edit-args JSON | --reject REASON | --always]")
    elif d.resumable:
        click.echo(f"\nThe last run stopped before it finished. Resume with: {resume_hint(ctx, c.id)}")


def _branch_mark(marker: BranchMarker | None) -> str:
    """` ‹2/3› branches 1 4 7`: this message has alternatives; `sophos branch ID N` shows one."""
    if marker is None:
        return ""
    return f" ‹{marker.index}/{marker.count}› branches {' '.join(str(n) for n in marker.numbers)}"


@click.command()
@click.argument("conversation")
@click.argument("number", type=int)
@global_options
@pass_ctx
def branch(ctx: Context, conversation: str, number: int) -> None:
    """Make branch NUMBER of CONVERSATION the active one (`sophos show` lists them)."""
    d = ctx.run(lambda: ctx.services.conversations().switch_branch(conversation, number))
    click.echo(f"{d.conversation.id}: branch {d.active_branch} of {max(1, len(d.branches))} · {len(d.messages)} messages")


@click.command()
@click.argument("conversation")
@click.option("--format", "fmt", type=click.Choice(["md", "jsonl"]), default="md", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to a file.")
@global_options
@pass_ctx
def export(ctx: Context, conversation: str, fmt: str, output: str | None) -> None:
    """Export a transcript (Markdown) or the checkpoint history (JSONL)."""
    service = ctx.services.conversations()
    _, text = ctx.run(
        lambda: service.export_jsonl(conversation) if fmt == "jsonl" else service.export_markdown(conversation)
    )
    if output:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as e:
            raise CliError("BAD_REQUEST", f"cannot write {output}: {e.strerror}", EXIT_BAD_INPUT) from None
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)


@click.command()
@click.argument("conversation")
@click.argument("title")
@server_option
@global_options
@pass_ctx
def rename(ctx: Context, conversation: str, title: str, server: str | None) -> None:
    """Give CONVERSATION a new TITLE."""
    if server:
        from entrypoints import remote

        try:
            new_title = remote.rename(server, conversation, title, api_token())["conversation"]["title"]
        except remote.RemoteError as e:
            raise remote_failure(e) from None
    else:
        new_title = ctx.run(lambda: ctx.services.conversations().rename(conversation, title)).title
    click.echo(f"renamed {conversation.lower()}: {new_title}")


@click.command()
@click.argument("conversation")
@server_option
@global_options
@pass_ctx
def delete(ctx: Context, conversation: str, server: str | None) -> None:
    """Delete CONVERSATION, its runs and every checkpoint of its thread."""
    if server:
        from entrypoints import remote

        try:
            remote.delete(server, conversation, api_token())
        except remote.RemoteError as e:
            raise remote_failure(e) from None
    else:
        ctx.run(lambda: ctx.services.conversations().delete(conversation))
    click.echo(f"deleted {conversation.lower()}")
