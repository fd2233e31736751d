"""`sophos serve`: uvicorn with a drain on SIGTERM/SIGINT.

uvicorn, on a signal, stops listening and then waits for open responses, SSE streams
included, before the app's lifespan shutdown runs. So the drain starts on the signal: new
runs get 503 while the active ones finish (up to SHUTDOWN_TIMEOUT), the rest are stopped
as `interrupted`, their streams end with that last event, and only then does uvicorn stop.
A second signal stops the runs at once.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import importlib.util
import ipaddress
import logging
import socket
from collections.abc import Mapping
from types import FrameType
from typing import TYPE_CHECKING, Any

import uvicorn

from domain.errors import StorageFailure
from entrypoints.bundle import Services
from entrypoints.http.app import create_app
from entrypoints.lgapi.guard import CorsPolicy
from entrypoints.overhead import warn_if_crowded
from entrypoints.protocol import MAX_HEAD, head_deadline_protocol
from entrypoints.settings import Settings
from entrypoints.settings_rules import chosen
from ports.backend import Backend
from ports.graphs import GraphCatalog
from ports.model import ModelPort, Readiness
from services.sessions import SessionService

if TYPE_CHECKING:
    from entrypoints.container import Container

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


class SideServer(uvicorn.Server):
    """A second server in the same loop (the LangGraph API): no signal handlers and no
    lifespan of its own; the main server's drain stops it."""

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        await self._serve(sockets)


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
        await self.sophos_app.state.services.supervisor().drain(timeout)
        self.sophos_app.state.closing.set()
        self.should_exit = True


async def warn_if_model_not_ready(model: ModelPort, timeout: float = 3.0) -> bool:
    """Check the model once before serving. A model that is not ready is one warning with the fix,
    not an error: the page and past conversations work without it, and the model may come up later."""
    try:
        ready: Readiness = await asyncio.wait_for(model.check(), timeout)
    except TimeoutError:
        ready = Readiness(False, f"no answer within {timeout:g} s", fix="check the model server with `sophos doctor`")
    except Exception as e:  # a readiness probe must never stop the server from starting
        ready = Readiness(False, f"{type(e).__name__}: {e}")
    if not ready.ok:
        log.warning("model not ready: %s (%s) — %s", ready.reason, ready.url, ready.fix)
    return ready.ok


class BadConfig(Exception):
    """Raised when the settings would serve what they must not (`sophos serve` exits with
    this one line, code 2)."""


def check_config(settings: Settings, env: Mapping[str, str]) -> None:
    """The rules `sophos serve` checks before it binds (BadConfig): a non-loopback HOST needs
    a login, and no proxy list but TRUSTED_PROXY_IPS is read."""
    if not is_loopback(settings.HOST) and not settings.API_TOKEN and settings.AUTH != "proxy":
        raise BadConfig(f"refusing to listen on {settings.HOST} without API_TOKEN set")
    if env.get("FORWARDED_ALLOW_IPS"):
        # docs/deployment.md once told TLS-proxy users to set it; uvicorn's forwarded headers
        # are off now, so it would silently mean nothing (every write of an https page 403)
        raise BadConfig(
            "FORWARDED_ALLOW_IPS is not read: name the proxies whose forwarded headers are "
            "believed in TRUSTED_PROXY_IPS, and unset FORWARDED_ALLOW_IPS"
        )


async def check_cors(settings: Settings, sessions: SessionService) -> None:
    """LANGGRAPH_API_CORS_ORIGINS only on a server that needs a login (API_TOKEN, users or
    AUTH=proxy): without one, any page of those origins would act as the admin (BadConfig)."""
    cors = CorsPolicy(settings.LANGGRAPH_API_CORS_ORIGINS)
    if settings.LANGGRAPH_API_PORT and (cors.any or cors.origins) and not await sessions.needed():
        raise BadConfig(
            "refusing to serve LANGGRAPH_API_CORS_ORIGINS without a login: any page of those "
            "origins would act as the admin; set API_TOKEN (or add a user)"
        )


class CannotListen(Exception):
    """Raised when the listening socket cannot be bound (the port is taken, the address is not ours)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def bind(host: str, port: int, setting: str = "--port or PORT") -> socket.socket:
    """The listening socket, bound before anything says "listening"; `setting` names what
    chooses the port, for the message when it is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OverflowError as e:
        sock.close()
        raise CannotListen("CANNOT_LISTEN", f"cannot listen on port {port}: a port is 1-65535 ({setting})") from e
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise CannotListen(
                "ADDRESS_IN_USE",
                f"{host}:{port} is already in use (another Sophos?): stop that server, or choose another port with {setting}",
            ) from e
        raise CannotListen("CANNOT_LISTEN", f"cannot listen on {host}:{port}: {e.strerror}") from e
    sock.listen(2048)  # connections queue from now on, as "listening" says
    # never passed on: uvloop spawns the MCP servers without closing inherited descriptors, so
    # a tool server that outlived a killed Sophos would keep the port (Python's default, said
    # here because uvicorn's own bind makes it inheritable for its worker processes)
    sock.set_inheritable(False)
    return sock


def event_loop() -> str:
    """uvloop when it is installed (a product dependency; not on Windows): about 10% off a
    turn's latency and 15-20% off its CPU against asyncio's own loop."""
    return "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"


async def check_storage(backend: Backend) -> None:
    """Open the database and check it whole before serving: a damaged file is one clear
    error at start-up (StorageFailure), not a traceback after "listening" or 500s later.
    In the serving loop, since a pooled backend's connections belong to the loop that opened them."""
    health = await backend.health(integrity=True)
    if not health.ok:
        raise StorageFailure(f"{health.where}: {health.integrity or health.problem}")


# CPython collects its youngest generation every 700 net allocations of container objects;
# a turn allocates tens of thousands (pydantic messages, LangGraph's tasks and writes), so
# at 64 conversations the server spent ~1.2 ms of a turn's ~13 ms in the collector, three
# full passes over the whole heap a minute among them. Every 20,000 keeps cycles collected
# (RSS after 1,000 conversations 113 -> 117 MB) at a tenth of the cost: CPU per turn -7 to -15%.
GC_THRESHOLDS = (20_000, 10, 10)


def tune_gc() -> None:
    gc.set_threshold(*GC_THRESHOLDS)


async def freeze_heap(main: uvicorn.Server) -> None:
    """Once the server has started: what start-up built (modules, the app, the supervisor's
    recovery) lives as long as the process, so it is moved out of the collector's reach
    (`gc.freeze`). Each full pass, every thread stopped, then walks only what was made
    since: beside a 20,000-message import read in the server, passes took 233-650 ms, and at
    most 166 ms with the start-up heap frozen (measured with `gc.callbacks`)."""
    while not main.started:
        if main.should_exit:
            return
        await asyncio.sleep(0.05)
    gc.collect()
    gc.freeze()


LGAPI_SETTING = "LANGGRAPH_API_PORT, or 0 to serve no LangGraph API"


def side_socket(settings: Settings, host: str) -> socket.socket | None:
    """The LangGraph API's bound socket; None when it is off, or when its default port is
    taken (`langgraph dev` and other tools use 2024 too): the page and /api are served all
    the same, with one warning. A port the person chose and cannot have is CannotListen."""
    port = settings.LANGGRAPH_API_PORT
    if not port:
        return None
    try:
        return bind(host, port, LGAPI_SETTING)
    except CannotListen as e:
        if e.code != "ADDRESS_IN_USE" or chosen("LANGGRAPH_API_PORT", settings):
            raise
    log.warning(
        "LangGraph API not served: %s:%d is in use (langgraph dev?); set LANGGRAPH_API_PORT to a free "
        "port for it, or to 0 to turn it off",
        url_host(host),
        port,
    )
    return None


def side_server(settings: Settings, app: Any, host: str, sock: socket.socket) -> SideServer:
    """The LangGraph API's server on `sock`, over the main app's services."""
    from entrypoints.lgapi.app import create_lgapi_app
    from entrypoints.lgapi.protocol_ws import MAX_WS_MESSAGE

    port = sock.getsockname()[1]
    lg_app = create_lgapi_app(app.state.services, settings, app.state.closing)
    config = uvicorn.Config(
        lg_app,
        host=host,
        port=port,
        loop=event_loop(),
        log_config=None,
        lifespan="off",
        access_log=False,
        timeout_graceful_shutdown=5,
        http=head_deadline_protocol(settings.REQUEST_TIMEOUT, settings.MAX_CONNECTIONS),
        h11_max_incomplete_event_size=MAX_HEAD,
        proxy_headers=False,  # as the main server: TRUSTED_PROXY_IPS decides (entrypoints.http.forwarded)
        # the thread protocol's socket (entrypoints.lgapi.protocol_ws): a message is a command,
        # bounded as a body is; no compression (a small frame must not inflate to a large one)
        ws="websockets-sansio",
        ws_max_size=MAX_WS_MESSAGE,
        ws_per_message_deflate=False,
    )
    return SideServer(config)


async def serve_after(main: uvicorn.Server, side: SideServer, sock: socket.socket) -> None:
    """Serve the side app once the main server has started (its lifespan recovered the
    runs a crash left), until the main one stops."""
    while not main.started:
        if main.should_exit:
            return
        await asyncio.sleep(0.02)
    print(f"LangGraph API on http://{url_host(sock.getsockname()[0])}:{sock.getsockname()[1]}", flush=True)
    await side.serve(sockets=[sock])


def load_graphs(container: Container) -> None:
    """Import the graphs of LANGGRAPH_JSON before anything listens: a file or a graph that
    fails stops start-up with one line naming the file and the error (GraphLoadFailed)."""
    catalog: GraphCatalog = container.graphs()
    if catalog.source is not None:
        ids = ", ".join(g.graph_id for g in catalog.graphs())
        # loaded and checked; the LangGraph API serves each as an assistant (docs/langgraph-api.md#your-own-graphs)
        print(f"Graphs loaded from {catalog.source}: {ids}", flush=True)


def serve(container: Container) -> None:
    settings = container.settings()
    host, port = settings.HOST, settings.PORT
    load_graphs(container)
    sock = bind(host, port)  # a busy port is the one line a person sees
    app = create_app(container)
    services: Services = app.state.services
    timeout = float(settings.SHUTDOWN_TIMEOUT)
    uv_config = uvicorn.Config(
        app,
        host=host,
        port=port,
        loop=event_loop(),
        log_config=None,
        timeout_graceful_shutdown=5,  # a stream still open after the drain is cut then
        access_log=False,
        # slowloris: a deadline and a size per request head; beyond MAX_CONNECTIONS requests
        # in progress, 503 at once (the protocol counts them: uvicorn's limit counts idle sockets too)
        http=head_deadline_protocol(settings.REQUEST_TIMEOUT, settings.MAX_CONNECTIONS),
        h11_max_incomplete_event_size=MAX_HEAD,
        # never uvicorn's forwarded headers (it trusts 127.0.0.1 unless FORWARDED_ALLOW_IPS):
        # the app believes them from TRUSTED_PROXY_IPS only (entrypoints.http.forwarded)
        proxy_headers=False,
    )
    server = DrainingServer(uv_config, app, timeout)
    side_sock = side_socket(settings, host)
    side = (side_server(settings, app, host, side_sock), side_sock) if side_sock is not None else None
    tune_gc()

    async def main() -> None:
        await check_storage(services.backend())
        if services.assistants is not None and services.graphs is not None and services.graphs().graphs():
            await services.assistants().register()  # each graph's start-up assistant, as langgraph-api makes them
        await check_cors(settings, services.sessions())  # the users are in the database
        await warn_if_model_not_ready(services.model())
        # in the background: it waits for the tool servers, which "listening" must not
        crowded = asyncio.create_task(warn_if_crowded(container))
        frozen = asyncio.create_task(freeze_heap(server))
        print(f"Sophos is listening on http://{url_host(host)}:{port}", flush=True)
        try:
            if side is None:
                await server.serve(sockets=[sock])
                return
            lg_server, lg_sock = side
            lg_task = asyncio.create_task(serve_after(server, lg_server, lg_sock))
            try:
                await server.serve(sockets=[sock])
            finally:
                lg_server.should_exit = True
                await asyncio.gather(lg_task, return_exceptions=True)
        finally:
            crowded.cancel()
            frozen.cancel()

    # one loop for the checks and the server (what uvicorn's Server.run does, with the checks first)
    with asyncio.Runner(loop_factory=uv_config.get_loop_factory()) as runner:
        runner.run(main())
