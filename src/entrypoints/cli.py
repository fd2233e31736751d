"""`sophos`: the command line, thin over the use cases."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from domain.errors import ErrorCode, SophosError
from domain.events import StreamEvent
from domain.model import iso, message_to_dto, summary_to_dto
from entrypoints.logs import configure_logging
from entrypoints.settings import SettingsError

T = TypeVar("T")

EXIT_CODES = {
    ErrorCode.BAD_REQUEST: 2,
    ErrorCode.NOT_FOUND: 3,
    ErrorCode.SESSION_IN_PROGRESS: 4,
    ErrorCode.RUN_NOT_RESUMABLE: 4,
    ErrorCode.NO_ACTIVE_RUN: 4,
    ErrorCode.DECISION_REQUIRED: 4,
    ErrorCode.MODEL_UNAVAILABLE: 5,
    ErrorCode.MODEL_UNREACHABLE: 5,
}


class CliError(click.ClickException):
    """An expected failure: one line on stderr, a meaningful exit code."""

    def __init__(self, code: str, message: str, exit_code: int = 1) -> None:
        super().__init__(f"{code}: {message}")
        self.exit_code = exit_code  # type: ignore[misc]  # click reads it per instance

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.message}", err=True)


def _fail(e: SophosError) -> CliError:
    return CliError(e.code.value, e.message, EXIT_CODES.get(e.code, 1))


class Context:
    """Builds the container lazily, so `--help` and bad options open nothing."""

    def __init__(self, overrides: dict[str, Any]) -> None:
        self.overrides = overrides
        self._container: Any = None

    @property
    def container(self) -> Any:
        if self._container is None:
            from entrypoints.container import create_container

            try:
                self._container = create_container(**self.overrides)
            except SettingsError as e:
                raise CliError("BAD_CONFIG", str(e), 2) from None
        return self._container

    def call(self, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except SophosError as e:
            raise _fail(e) from None

    def run(self, coro: Callable[[], Awaitable[T]]) -> T:
        """Run a coroutine, then close tools and database."""
        from entrypoints.container import close_container

        async def main() -> T:
            try:
                return await coro()
            finally:
                await close_container(self.container)

        try:
            return asyncio.run(main())
        except SophosError as e:
            raise _fail(e) from None


pass_ctx = click.make_pass_decorator(Context)


class Commands(click.Group):
    """The group that never lets a traceback out: an expected failure is one line (with
    its exit code), anything else one line naming it (the traceback only with -v)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SophosError as e:
            raise _fail(e) from None
        except (click.exceptions.Exit, click.ClickException, click.Abort, KeyboardInterrupt):
            raise
        except Exception as e:
            logging.getLogger("sophos.cli").info("unexpected failure", exc_info=e)  # shown with -v
            raise CliError("INTERNAL_ERROR", f"unexpected {type(e).__name__}: {e} (run with -v for details)") from None


@click.group(cls=Commands)
@click.option("--db", "database", help="SQLite file (DATABASE_PATH).")
@click.option("--model", "model_backend", type=click.Choice(["ollama", "openai", "demo"]), help="Model backend (MODEL_BACKEND).")
@click.option("--tools", "tools_backend", type=click.Choice(["mcp", "demo", "none"]), help="Tools backend (TOOLS_BACKEND).")
@click.option("-v", "--verbose", is_flag=True, help="Log progress to stderr.")
@click.pass_context
def main(ctx: click.Context, database: str | None, model_backend: str | None, tools_backend: str | None, verbose: bool) -> None:
    """Sophos: a local-first chat agent whose runs survive crashes."""
    overrides: dict[str, Any] = {}
    if database:
        overrides["DATABASE_PATH"] = database
    if model_backend:
        overrides["MODEL_BACKEND"] = model_backend
    if tools_backend:
        overrides["TOOLS_BACKEND"] = tools_backend
    configure_logging("INFO" if verbose else "WARNING")
    ctx.obj = Context(overrides)


# --- runs -------------------------------------------------------------------------------


def _print_event(event: str, data: Any, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"event": event, "data": data}, ensure_ascii=False))
        return
    if event == "token":
        click.echo(data, nl=False)
    elif event == "trace" and data["event"] == "call":
        args = json.dumps(data["data"]["arguments"], ensure_ascii=False)
        click.secho(f"\n→ {data['name']} {args}", fg="cyan", err=True)
    elif event == "trace" and data["event"] == "result":
        text = data["data"]["result"].replace("\n", " ")
        click.secho(f"← {data['name']}: {text[:200]}", fg="cyan", err=True)


def _report(cid: str, run_id: str, status: str, error: dict[str, Any] | None, as_json: bool) -> int:
    if not as_json:
        click.echo("")
        if error:
            click.echo(f"error: {error['code']}: {error['message']}", err=True)
        if status in ("interrupted", "cancelled"):
            click.echo(f"{status}; its progress is saved. Resume with: sophos resume {cid}", err=True)
        click.echo(f"conversation: {cid}  run: {run_id}  status: {status}", err=True)
    return {"completed": 0, "interrupted": 130, "cancelled": 130}.get(status, 1)


def _outcome(event: str, data: Any, status: str, error: Any) -> tuple[str, Any]:
    if event == "end":
        return data["status"], None
    if event == "chat-error":
        return "lost" if data.get("code") == "RUN_LOST" else "failed", data
    return status, error


async def _drive(ctx: Context, start: Callable[[Any], Awaitable[Any]], as_json: bool) -> int:
    from domain.lifecycle import StopReason
    from domain.supervisor import Supervisor

    service = ctx.container.run_service()
    supervisor = Supervisor(service)  # leases, signals, events: no adoption from a CLI
    await supervisor.start()
    loop = asyncio.get_running_loop()
    status, error = "completed", None
    try:
        started = await start(service)
        # Ctrl-C: the person stops the run (`cancelled`, resumable); SIGTERM: `interrupted`
        loop.add_signal_handler(signal.SIGINT, service.stop_local, started.run_id, StopReason.CANCEL)
        loop.add_signal_handler(signal.SIGTERM, service.stop_local, started.run_id, StopReason.SHUTDOWN)
        events = await service.follow(started.conversation_id, 0)
        if isinstance(events, StreamEvent):  # it ended before we could attach: the durable answer
            status, error = _outcome(events.event, events.data, status, error)
        else:
            async for _, ev in events:
                _print_event(ev.event, ev.data, as_json)
                status, error = _outcome(ev.event, ev.data, status, error)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        loop.remove_signal_handler(signal.SIGTERM)
        await supervisor.close()
    return _report(started.conversation_id, started.run_id, status, error, as_json)


def _drive_remote(server: str, body: dict[str, Any], as_json: bool) -> int:
    """Be a client of a running server: POST the run, then follow its SSE stream."""
    from entrypoints.remote import RemoteError, follow_run

    status, error = "completed", None
    try:
        started, events = follow_run(server, body, os.environ.get("API_TOKEN") or None)
        for event, data in events:
            _print_event(event, data, as_json)
            status, error = _outcome(event, data, status, error)
    except RemoteError as e:
        raise CliError(e.code, e.message, EXIT_CODES.get(ErrorCode(e.code), 1) if e.code in ErrorCode.__members__ else 1) from None
    return _report(started["conversation"], started["run"], status, error, as_json)


@main.command()
@click.argument("message")
@click.option("-c", "--conversation", help="Continue this conversation.")
@click.option("--json", "as_json", is_flag=True, help="Print events as JSON lines.")
@click.option("--server", metavar="URL", help="Use a running server instead of the database file.")
@pass_ctx
def chat(ctx: Context, message: str, conversation: str | None, as_json: bool, server: str | None) -> None:
    """Send MESSAGE and stream the answer (tokens, tool calls) as it comes."""
    if server:
        body: dict[str, Any] = {"message": message, **({"conversation": conversation} if conversation else {})}
        sys.exit(_drive_remote(server, body, as_json))
    code = ctx.run(lambda: _drive(ctx, lambda s: s.start(message, conversation), as_json))
    sys.exit(code)


@main.command()
@click.argument("conversation")
@click.option("--decision", type=click.Choice(["retry", "skip"]), help="For a tool call whose outcome is unknown.")
@click.option("--json", "as_json", is_flag=True, help="Print events as JSON lines.")
@click.option("--server", metavar="URL", help="Use a running server instead of the database file.")
@pass_ctx
def resume(ctx: Context, conversation: str, decision: str | None, as_json: bool, server: str | None) -> None:
    """Continue CONVERSATION from its last checkpoint."""
    if server:
        body: dict[str, Any] = {"resume": True, "conversation": conversation}
        if decision:
            body["decision"] = decision
        sys.exit(_drive_remote(server, body, as_json))
    code = ctx.run(lambda: _drive(ctx, lambda s: s.start(None, conversation, True, decision), as_json))
    sys.exit(code)


# --- reading ----------------------------------------------------------------------------


async def _recover(ctx: Context) -> None:
    # the full stack (LangGraph, the model client) loads only when there is a run to reclaim
    container = ctx.container
    if await container.store().running_runs():
        from domain.supervisor import Supervisor

        await Supervisor(container.run_service()).recover()


@main.command()
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def conversations(ctx: Context, as_json: bool) -> None:
    """List conversations, most recently updated first."""
    async def load() -> Any:
        await _recover(ctx)
        return await ctx.container.conversations().list()

    items = ctx.run(load)
    if as_json:
        click.echo(json.dumps({"conversations": [summary_to_dto(c) for c in items]}, ensure_ascii=False))
        return
    if not items:
        click.echo("No conversations yet.")
    lines = (
        f"{c.id}  {iso(c.updated_at)}  {c.message_count:>4} msgs  {(c.status.value if c.status else '-'):<11}  {c.title}"
        for c in items
    )
    if items:
        click.echo("\n".join(lines))  # one write, not one per row


@main.command()
@click.argument("conversation")
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def show(ctx: Context, conversation: str, as_json: bool) -> None:
    """Show a conversation's messages and whether it can be resumed."""
    async def load() -> Any:
        await _recover(ctx)
        return await ctx.container.conversations().get(conversation)

    d = ctx.run(load)
    if as_json:
        body = {
            "conversation": summary_to_dto(d.conversation),
            "messages": [message_to_dto(m) for m in d.messages],
            "resumable": d.resumable,
        }
        if d.pending_calls:
            body["pendingToolCalls"] = [
                {"id": p.call.id, "name": p.call.name, "args": p.call.args, "outcomeUnknown": p.started, "unsafe": p.unsafe}
                for p in d.pending_calls
            ]
            body["decisionRequired"] = d.decision_required
        click.echo(json.dumps(body, ensure_ascii=False))
        return
    c = d.conversation
    click.echo(f"# {c.title}\n{c.id} · {c.message_count} messages · {c.status.value if c.status else 'no runs'}")
    if c.error:
        click.echo(f"error: {c.error.code}: {c.error.message}")
    for m in d.messages:
        dto = message_to_dto(m)
        if dto["role"] == "tool":
            click.echo(f"\n[tool {dto['name']} · {dto['status']}]\n{dto['content']}")
        else:
            click.echo(f"\n[{dto['role']}]\n{dto['content']}")
            for call in dto.get("toolCalls", []):
                click.echo(f"→ {call['name']} {json.dumps(call['args'], ensure_ascii=False)}")
    if d.decision_required:
        for p in d.pending_calls:
            if p.needs_decision:
                click.echo(f"\n! {p.call.name} {json.dumps(p.call.args, ensure_ascii=False)} may have taken effect")
        click.echo(f"Decide: sophos resume {c.id} --decision retry   (or --decision skip)")
    elif d.resumable:
        click.echo(f"\nThe last run stopped before it finished. Resume with: sophos resume {c.id}")


@main.command()
@click.argument("conversation")
@click.option("--format", "fmt", type=click.Choice(["md", "jsonl"]), default="md", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to a file.")
@pass_ctx
def export(ctx: Context, conversation: str, fmt: str, output: str | None) -> None:
    """Export a transcript (Markdown) or the checkpoint history (JSONL)."""
    service = ctx.container.conversations()
    _, text = ctx.run(
        lambda: service.export_jsonl(conversation) if fmt == "jsonl" else service.export_markdown(conversation)
    )
    if output:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)


@main.group()
def db() -> None:
    """Inspect and maintain the database file."""


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


@db.command()
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def stats(ctx: Context, as_json: bool) -> None:
    """Size, counts and the largest threads."""
    s = ctx.call(lambda: ctx.container.storage().stats())
    if as_json:
        from dataclasses import asdict

        click.echo(json.dumps(asdict(s)))
        return
    click.echo(f"{s.path}: {_mb(s.file_bytes)} ({_mb(s.free_bytes)} free inside)")
    click.echo(f"conversations {s.conversations}  runs {s.runs}  checkpoints {s.checkpoints} "
               f"(history {s.logged_checkpoints})  pending writes {s.writes}")
    for t in s.largest:
        click.echo(f"  {t.thread_id}  {t.checkpoints} checkpoints  {_mb(t.bytes)}")


@db.command()
@click.option("--keep", type=int, default=None, help="Checkpoints kept per thread (default CHECKPOINT_KEEP).")
@pass_ctx
def prune(ctx: Context, keep: int | None) -> None:
    """Delete all but the latest checkpoints of every thread (the export history stays)."""
    k = keep if keep is not None else max(int(ctx.container.config.CHECKPOINT_KEEP()), 1)
    deleted = ctx.call(lambda: ctx.container.storage().prune(k))
    click.echo(f"deleted {deleted} checkpoint(s); kept the latest {k} of each thread")


@db.command()
@pass_ctx
def vacuum(ctx: Context) -> None:
    """Give free space back to the file system."""
    before, after = ctx.call(lambda: ctx.container.storage().vacuum())
    click.echo(f"{_mb(before)} -> {_mb(after)}")


@main.command()
@pass_ctx
def doctor(ctx: Context) -> None:
    """Check the model server and every MCP server, as readyz does, for a person."""

    async def check() -> bool:
        container = ctx.container
        model = container.model()
        ok, why = await model.check()
        ok = bool(ok)
        click.echo(f"{'ok ' if ok else 'BAD'}  model    {container.config.MODEL_BACKEND()} {model.name}: {why}")
        healthy = ok
        await container.tools().list_tools()  # waits for the servers' first start, bounded
        statuses = await container.tools().status()
        if not statuses:
            click.echo("ok   tools    none configured")
        for s in statuses:
            detail = f"{s.tools} tool(s)" if s.ok else (s.error or "not running")
            click.echo(f"{'ok ' if s.ok else 'BAD'}  tools    {s.name}: {detail}")
            healthy = healthy and bool(s.ok)
        store = container.store()
        problem = store.integrity_problem()
        mark = "ok " if problem is None else "BAD"
        click.echo(f"{mark}  database {container.config.DATABASE_PATH()} (schema v{store.schema_version}){': ' + problem if problem else ''}")
        return healthy and problem is None

    sys.exit(0 if ctx.run(check) else 1)


@main.command()
@click.option("--host", help="Interface to listen on (HOST, default 127.0.0.1).")
@click.option("--port", type=int, help="Port (PORT, default 8000).")
@pass_ctx
def serve(ctx: Context, host: str | None, port: int | None) -> None:
    """Start the HTTP API and web page."""
    from entrypoints.server import is_loopback
    from entrypoints.server import serve as run_server

    container = ctx.container
    if host:
        container.config.HOST.from_value(host)
    if port:
        container.config.PORT.from_value(port)
    configure_logging(container.config.LOG_LEVEL())
    if not is_loopback(container.config.HOST()) and not container.config.API_TOKEN():
        raise CliError("BAD_CONFIG", f"refusing to listen on {container.config.HOST()} without API_TOKEN set", 2)
    ctx.call(lambda: run_server(container))
