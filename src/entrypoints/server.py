"""`sophos serve`: uvicorn with a drain on SIGTERM/SIGINT.

uvicorn, on a signal, stops listening and then waits for open responses, SSE streams
included, before the app's lifespan shutdown runs. So the drain starts on the signal: new
runs get 503 while the active ones finish (up to SHUTDOWN_TIMEOUT), the rest are stopped
as `interrupted`, their streams end with that last event, and only then does uvicorn stop.
A second signal stops the runs at once.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from types import FrameType
from typing import Any

import uvicorn

from domain.errors import StorageFailure
from entrypoints.http.app import create_app
from entrypoints.protocol import head_deadline_protocol

log = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_host(host: str) -> str:
    """The host as written in a URL: an IPv6 address in brackets (`[::1]`)."""
    try:
        return f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        return host


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: Any, timeout: float) -> None:
        super().__init__(config)
        self.sophos_app = app
        self.drain_timeout = timeout
        self.drain_task: asyncio.Task[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.loop is None:
            super().handle_exit(sig, frame)
            return
        if self.drain_task is None:
            log.info("signal %s: draining runs for up to %.0f s", sig, self.drain_timeout)
            self.loop.call_soon_threadsafe(self._start_drain, self.drain_timeout)
        else:
            log.info("second signal: stopping runs now")
            self.loop.call_soon_threadsafe(self._start_drain, 0.0)

    def _start_drain(self, timeout: float) -> None:
        self.drain_task = asyncio.ensure_future(self._drain(timeout))

    async def _drain(self, timeout: float) -> None:
        await self.sophos_app.state.container.supervisor().drain(timeout)
        self.sophos_app.state.closing.set()
        self.should_exit = True


def model_fix(config: Any) -> str:
    """What a person can do when the configured model server is not ready."""
    if config.MODEL_BACKEND() == "openai":
        return "start the OpenAI-compatible server, set OPENAI_BASE_URL and OPENAI_MODEL, or run `make demo`"
    return f"start Ollama (`ollama serve`) and `ollama pull {config.OLLAMA_MODEL()}`, set OLLAMA_HOST, or run `make demo`"


def warn_if_model_not_ready(container: Any, timeout: float = 3.0) -> bool:
    """Check the model once before serving. A model that is not ready is one warning with the fix,
    not an error: the page and past conversations work without it, and the model may come up later."""
    config = container.config

    async def check() -> tuple[bool, str]:
        try:
            result: tuple[bool, str] = await asyncio.wait_for(container.model().check(), timeout)
            return result
        except TimeoutError:
            return False, f"no answer within {timeout:g} s"
        except Exception as e:  # a readiness probe must never stop the server from starting
            return False, f"{type(e).__name__}: {e}"

    ok, why = asyncio.run(check())
    if not ok:
        where = config.OPENAI_BASE_URL() if config.MODEL_BACKEND() == "openai" else config.OLLAMA_HOST()
        log.warning("model not ready: %s (%s) — %s", why, where, model_fix(config))
    return ok


def check_database(container: Any) -> None:
    """Open the database and check it whole before serving: a damaged file is one clear
    error at start-up (StorageFailure), not a traceback after "listening" or 500s later."""
    problem = container.store().integrity_problem()
    if problem is not None:
        raise StorageFailure(f"{container.config.DATABASE_PATH()}: {problem}")


def serve(container: Any) -> None:
    config = container.config
    check_database(container)
    warn_if_model_not_ready(container)
    host, port = config.HOST(), int(config.PORT())
    app = create_app(container)
    timeout = float(config.SHUTDOWN_TIMEOUT())
    uv_config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        timeout_graceful_shutdown=5,  # a stream still open after the drain is cut then
        access_log=False,
        http=head_deadline_protocol(float(config.REQUEST_TIMEOUT())),  # slowloris: a deadline per request head
        limit_concurrency=int(config.MAX_CONNECTIONS()),  # beyond it, 503 at once
    )
    server = DrainingServer(uv_config, app, timeout)
    print(f"Sophos is listening on http://{url_host(host)}:{port}", flush=True)
    server.run()
