"""`sophos serve`: the HTTP API and the web page."""

from __future__ import annotations

import os

import click

from entrypoints.cli.base import CliError, Context, options, pass_ctx
from entrypoints.cli.exits import EXIT_BAD_INPUT, EXIT_SERVER
from entrypoints.logs import configure_logging


@click.command()
@click.option("--host", help="Interface to listen on (HOST, default 127.0.0.1).")
@click.option("--port", type=click.IntRange(1, 65535), help="Port (PORT, default 8000).")
@click.option(
    "--langgraph-json",
    "langgraph_json",
    metavar="PATH",
    help="A langgraph.json whose graphs are loaded at start-up (LANGGRAPH_JSON).",
)
@options("backend", "tools")
@pass_ctx
def serve(ctx: Context, host: str | None, port: int | None, langgraph_json: str | None) -> None:
    """Start the HTTP API and web page."""
    from entrypoints.server import BadConfig, CannotListen, check_config
    from entrypoints.server import serve as run_server

    ctx.overrides["METRICS_BACKEND"] = "prometheus"
    if host:
        ctx.overrides["HOST"] = host
    if port:
        ctx.overrides["PORT"] = port
    if langgraph_json:
        ctx.overrides["LANGGRAPH_JSON"] = langgraph_json
    container = ctx.container
    settings = ctx.settings
    configure_logging("INFO" if ctx.verbose else settings.LOG_LEVEL)
    try:
        check_config(settings, os.environ)
        ctx.call(lambda: run_server(container))
    except BadConfig as e:
        raise CliError("BAD_CONFIG", str(e), EXIT_BAD_INPUT) from None
    except CannotListen as e:
        raise CliError(e.code, str(e), EXIT_SERVER) from None
