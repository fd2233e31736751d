"""The LangGraph API app: routes over the same Services as the main app. It has no
lifespan of its own: `sophos serve` runs it beside the main app, which owns the process's
supervisor, and hands it the main app's `closing` event so streams end with the drain."""

from __future__ import annotations

import asyncio

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route, WebSocketRoute

from domain.principals import TrustedProxies
from entrypoints.bundle import Services
from entrypoints.http.errors import EXCEPTION_HANDLERS
from entrypoints.http.forwarded import ForwardedMiddleware
from entrypoints.http.guard import HostPolicy
from entrypoints.http.headers import HardeningMiddleware
from entrypoints.lgapi import assistants, crons, hosted_threads, meta, protocol, protocol_ws, runs, store, threads
from entrypoints.lgapi.guard import CorsPolicy, LangGraphGuard
from entrypoints.settings import Settings

T = "/threads/{thread_id:uuid}"
R = T + "/runs/{run_id:uuid}"
A = "/assistants/{assistant_id}"

ROUTES = [
    # a turn's routes first: Starlette tries each route's pattern in order
    Route(T + "/runs/stream", runs.stream_run, methods=["POST"]),
    Route("/threads", threads.create_thread, methods=["POST"]),
    Route("/ok", meta.ok, methods=["GET"]),
    Route("/info", meta.info, methods=["GET"]),
    Route("/assistants", assistants.create_assistant, methods=["POST"]),
    Route("/assistants/search", assistants.search_assistants, methods=["POST"]),
    Route("/assistants/count", assistants.count_assistants, methods=["POST"]),
    Route(A, assistants.get_assistant, methods=["GET"]),
    Route(A, assistants.update_assistant, methods=["PATCH"]),
    Route(A, assistants.delete_assistant, methods=["DELETE"]),
    Route(A + "/versions", assistants.assistant_versions, methods=["POST"]),
    Route(A + "/latest", assistants.set_latest, methods=["POST"]),
    Route(A + "/graph", meta.get_graph, methods=["GET"]),
    Route(A + "/schemas", meta.get_schemas, methods=["GET"]),
    Route(A + "/subgraphs", meta.get_subgraphs, methods=["GET"]),
    Route("/threads/search", threads.search_threads, methods=["POST"]),
    Route("/threads/count", threads.count_threads, methods=["POST"]),
    Route(T, hosted_threads.get_thread, methods=["GET"]),
    Route(T, threads.patch_thread, methods=["PATCH"]),
    Route(T, hosted_threads.delete_thread, methods=["DELETE"]),
    Route(T + "/copy", threads.copy_thread, methods=["POST"]),
    Route(T + "/state", hosted_threads.get_state, methods=["GET"]),
    Route(T + "/state", hosted_threads.update_state, methods=["POST"]),
    Route(T + "/state/{checkpoint_id}", hosted_threads.get_state_at, methods=["GET"]),
    Route(T + "/history", hosted_threads.history, methods=["POST"]),
    Route(T + "/runs", runs.create_run, methods=["POST"]),
    Route(T + "/runs", runs.list_runs, methods=["GET"]),
    Route(T + "/runs/wait", runs.wait_run, methods=["POST"]),
    Route(R, runs.get_run, methods=["GET"]),
    Route(R, runs.delete_run, methods=["DELETE"]),
    Route(R + "/join", runs.join_run, methods=["GET"]),
    Route(R + "/stream", runs.join_stream, methods=["GET"]),
    Route(R + "/cancel", runs.cancel_run, methods=["POST"]),
    Route("/runs/stream", runs.stream_stateless, methods=["POST"]),
    Route(T + "/commands", protocol.command, methods=["POST"]),
    Route(T + "/stream/events", protocol.stream_events, methods=["POST"]),
    WebSocketRoute(T + "/stream/events", protocol_ws.thread_socket),
    Route("/runs/wait", runs.wait_stateless, methods=["POST"]),
    Route("/runs/crons", crons.create_cron, methods=["POST"]),
    Route("/runs/crons/search", crons.search_crons, methods=["POST"]),
    Route("/runs/crons/count", crons.count_crons, methods=["POST"]),
    Route(T + "/runs/crons", crons.create_thread_cron, methods=["POST"]),
    Route("/runs/crons/{cron_id}", crons.get_cron, methods=["GET"]),
    Route("/runs/crons/{cron_id}", crons.patch_cron, methods=["PATCH"]),
    Route("/runs/crons/{cron_id}", crons.delete_cron, methods=["DELETE"]),
    Route("/store/items", store.put_item, methods=["PUT"]),
    Route("/store/items", store.get_item, methods=["GET"]),
    Route("/store/items", store.delete_item, methods=["DELETE"]),
    Route("/store/items/search", store.search_items, methods=["POST"]),
    Route("/store/namespaces", store.list_namespaces, methods=["POST"]),
]


def create_lgapi_app(services: Services, settings: Settings, closing: asyncio.Event) -> Starlette:
    hosts = HostPolicy.from_settings(settings.ALLOWED_HOSTS, settings.HOST)
    app = Starlette(
        routes=ROUTES,
        middleware=[
            Middleware(HardeningMiddleware),
            Middleware(ForwardedMiddleware, proxies=TrustedProxies(settings.TRUSTED_PROXY_IPS)),
            Middleware(
                LangGraphGuard,
                token=settings.API_TOKEN,
                hosts=hosts,
                cors=CorsPolicy(settings.LANGGRAPH_API_CORS_ORIGINS),
                sessions=services.sessions,
            ),
        ],
        exception_handlers=EXCEPTION_HANDLERS,
    )
    app.state.services = services
    app.state.closing = closing
    app.state.ping_seconds = settings.SSE_PING_SECONDS
    app.state.request_timeout = settings.REQUEST_TIMEOUT
    return app
