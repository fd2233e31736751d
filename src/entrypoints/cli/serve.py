"""`sophos serve`: the HTTP API and the web page."""

from __future__ import annotations

import click

from entrypoints.cli.base import CliError, Context, global_options, pass_ctx
from entrypoints.cli.exits import EXIT_BAD_INPUT, EXIT_SERVER
from entrypoints.logs import configure_logging


@click.command()
@click.option("--host", help="Interface to listen on (HOST, default 127.0.0.1).")
@click.option("--port", type=click.IntRange(1, 65535), help="Port (PORT, default 8000).")
@global_options
@pass_ctx
def serve(ctx: Context, host: str | None, port: int | None) -> None:
    """Start the HTTP API and web page."""
    from entrypoints.server import CannotListen, is_loopback
    from entrypoints.server import serve as run_server

    ctx.overrides["METRICS_BACKEND"] = "prometheus"
    if host:
        ctx.overrides["HOST"] = host
    if port:
        ctx.overrides["PORT"] = port
    container = ctx.container
    settings = ctx.settings
    configure_logging("INFO" if ctx.verbose else settings.LOG_LEVEL)
    if not is_loopback(settings.HOST) and not settings.API_TOKEN and settings.AUTH != "proxy":
        raise CliError("BAD_CONFIG", f"refusing to listen on {settings.HOST} without API_TOKEN set", EXIT_BAD_INPUT)
    try:
        ctx.call(lambda: run_server(container))
    except CannotListen as e:
        raise CliError(e.code, str(e), EXIT_SERVER) from None
