"""`sophos doctor`: the model server, every MCP server and the database, checked for a person."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

import click

from domain.context import CROWDED_FIX
from entrypoints.cli.base import Context, finish, options, pass_ctx
from entrypoints.cli.hints import for_cli
from entrypoints.overhead import measure


@dataclass(frozen=True)
class Check:
    kind: str  # model, tools, database
    name: str
    ok: bool
    detail: str
    url: str = ""  # what was tried
    fix: str = ""


async def _checks(ctx: Context) -> list[Check]:
    container, settings = ctx.container, ctx.settings
    model = container.model()
    ready = await model.check()
    checks = [Check("model", f"{settings.MODEL_BACKEND} {model.name}", ready.ok, ready.reason, ready.url, for_cli(ready.fix))]
    await container.tools().list_tools()  # waits for the servers' first start, bounded
    statuses = await container.tools().status()
    if not statuses:
        checks.append(Check("tools", "none configured", True, "no tool servers"))
    for s in statuses:
        target = str(s.extra.get("target", ""))
        fix = (
            f"fix it in {settings.CONFIG_DIR}/mcp.json"
            + (f" (run `{target}` by hand to see its error)" if target and not target.startswith("http") else "")
            + ", or run without tools (--tools none)"
        )
        detail = f"{s.tools} tool(s)" if s.ok else (s.error or "not running")
        checks.append(Check("tools", s.name, bool(s.ok), detail, target, "" if s.ok else fix))
    cost = await measure(container)
    detail = cost.problem() or f"the system prompt and tools take ~{cost.total:,} of {cost.budget:,} prompt tokens"
    checks.append(
        Check("context", f"MODEL_CONTEXT {settings.MODEL_CONTEXT}", not cost.over, detail, fix=CROWDED_FIX if cost.over else "")
    )
    if ready.ok:
        checks.append(await _window(ctx))
    health = await ctx.services.backend().health(integrity=True)
    checks.append(Check("database", health.where, health.ok, health.detail, fix="" if health.ok else health.fix))
    return checks


async def _window(ctx: Context) -> Check:
    """MODEL_CONTEXT beside what the server reports for the default model: llama.cpp's
    window of one slot (`/props`), Ollama's training length (`/api/show`, the most `num_ctx`
    can give). Runs plan for the smaller, so a larger setting is said, not an error."""
    model, setting = ctx.container.model(), ctx.settings.MODEL_CONTEXT
    try:
        reported = next((m.context for m in await model.models() if m.name == model.name), None)
    except Exception as e:  # the model check above says what is wrong with the server
        return Check("window", f"MODEL_CONTEXT {setting}", True, f"the server's window is unknown ({e})")
    if reported is None:
        return Check("window", f"MODEL_CONTEXT {setting}", True, "the server reports no window: runs plan for MODEL_CONTEXT")
    if reported < setting:
        detail = f"the server gives {model.name} {reported:,} tokens a request: runs plan for {reported:,}, not {setting:,}"
    else:
        detail = f"the server allows {model.name} up to {reported:,} tokens: runs plan for {setting:,}"
    return Check("window", f"MODEL_CONTEXT {setting}", True, detail)


def _line(c: Check) -> str:
    where = f" ({c.url})" if c.url else ""
    line = f"{'ok ' if c.ok else 'BAD'}  {c.kind:<8} {c.name}: {c.detail}{where}"
    return line if c.ok else f"{line}\n     fix: {c.fix}"


@click.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object: every check with its URL and fix.")
@options("backend", "tools")
@pass_ctx
def doctor(ctx: Context, as_json: bool) -> None:
    """Check the model server and every MCP server, as readyz does, for a person."""
    checks = ctx.run(lambda: _checks(ctx))
    healthy = all(c.ok for c in checks)
    if as_json:
        body: dict[str, Any] = {"ok": healthy, "checks": [asdict(c) for c in checks]}
        click.echo(json.dumps(body, ensure_ascii=False))
    else:
        click.echo("\n".join(_line(c) for c in checks))
    finish(0 if healthy else 1)
