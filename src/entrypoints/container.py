"""The composition root: the only module that knows every adapter and wires them.

Adapters are imported inside their factories (entrypoints/factories.py), so a command that only lists conversations
never loads LangGraph, LangChain or the MCP client (a cold `sophos conversations` stays fast).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from typing import TYPE_CHECKING, Any, Protocol

from adapters.otel.config import TraceConfig, trace_config
from entrypoints import conversation_factories, factories
from entrypoints.bundle import Services
from entrypoints.di import containers, providers
from entrypoints.settings import Settings, SettingsError, load_settings
from ports.metrics import MetricsPort, NullMetrics
from ports.model import ModelPort
from ports.tools import ToolPort
from services.after_runs import AfterRuns
from services.allow_rules import AllowRules
from services.assistants import AssistantService
from services.files import FileService
from services.hosted import GraphAwareRuns, HostedRuns
from services.knowledge import KnowledgeService
from services.memory import MemoryService
from services.models import ModelCatalog
from services.presets import PresetService
from services.queueing import QueueService
from services.runs import RunService
from services.scheduler import Scheduler
from services.schedules import ScheduleService
from services.search import SearchService
from services.sessions import SessionService
from services.store import StoreService
from services.supervisor import Supervisor
from services.unsaved import UnsavedOutcomes
from services.usage import UsageMeter, UsageService
from services.user_data import UserData
from services.user_deletion import UserDeletion
from services.users import UserService
from services.webhooks import WebhookService

if TYPE_CHECKING:
    from adapters.memory.backend import MemoryBackend
    from adapters.postgres.backend import PostgresBackend
    from adapters.sqlite.backend import SqliteBackend

    # the concrete classes: each one's saver is also LangGraph's, which the engine needs
    StorageBackend = SqliteBackend | PostgresBackend | MemoryBackend

log = logging.getLogger(__name__)


class AsyncCloseable(Protocol):
    """What a `providers.Resource` of this container provides: close_container() closes it."""

    async def aclose(self) -> None: ...


class Container(containers.DeclarativeContainer):
    # the typed settings (for the edges), and the same values as a Configuration (for providers)
    settings = providers.Dependency(instance_of=Settings)
    config = providers.Configuration(strict=True)

    processes = providers.Singleton(factories.processes)
    # the server exposes its metrics at /metrics; one-shot CLI commands, which nobody
    # scrapes, record nothing (and never import prometheus-client)
    metrics: providers.Selector[MetricsPort] = providers.Selector(
        config.METRICS_BACKEND, prometheus=providers.Singleton(factories.prometheus), none=providers.Singleton(NullMetrics)
    )
    # one storage for everything, chosen once (settings.py decides STORAGE_BACKEND)
    backend: providers.Selector[StorageBackend] = providers.Selector(
        config.STORAGE_BACKEND,
        sqlite=providers.Resource(
            factories.sqlite_backend, config.DATABASE_PATH, config.DATABASE_BUSY_TIMEOUT, config.CHECKPOINT_KEEP, metrics
        ),
        postgres=providers.Resource(
            factories.postgres_backend,
            config.DATABASE_URL,
            config.DATABASE_POOL_SIZE,
            config.DATABASE_BUSY_TIMEOUT,
            config.CHECKPOINT_KEEP,
            processes,
        ),
        memory=providers.Singleton(factories.memory_backend),
    )
    checkpointer = providers.Singleton(factories.saver, backend)
    store = providers.Singleton(factories.run_store, backend)
    storage = providers.Singleton(factories.maintenance, backend)
    prompt = providers.Singleton(factories.prompt, config.CONFIG_DIR)
    graphs = providers.Singleton(factories.graphs, config.LANGGRAPH_JSON)

    model: providers.Selector[ModelPort] = providers.Selector(
        config.MODEL_BACKEND,
        ollama=providers.Resource(
            factories.ollama,
            config.OLLAMA_HOST,
            config.OLLAMA_MODEL,
            config.OLLAMA_THINK,
            config.MODEL_TIMEOUT,
            config.MODEL_CONTEXT,
            config.MODEL_TRANSPORT,
            config.MODEL_MAX_TOKENS,
            config.MODEL_TOOL_CHOICE,
        ),
        openai=providers.Resource(
            factories.openai,
            config.OPENAI_BASE_URL,
            config.OPENAI_MODEL,
            config.OPENAI_API_KEY,
            config.MODEL_TIMEOUT,
            config.MODEL_TRANSPORT,
            config.MODEL_MAX_TOKENS,
            config.MODEL_TOOL_CHOICE,
        ),
        demo=providers.Singleton(factories.demo_model),
    )
    # each user's store (issue 45), with semantic search when EMBEDDING_MODEL is set
    long_term_store = providers.Resource(
        factories.long_term_store,
        backend,
        config.MODEL_BACKEND,
        config.EMBEDDING_MODEL,
        config.OLLAMA_HOST,
        config.OPENAI_BASE_URL,
        config.OPENAI_API_KEY,
        config.MODEL_TIMEOUT,
    )
    # what the agent remembers about each user, in the store (MEMORY_BACKEND=store)
    memory = providers.Singleton(MemoryService, long_term_store)
    tools: providers.Selector[ToolPort] = providers.Selector(
        config.TOOLS_BACKEND,
        mcp=providers.Resource(
            factories.mcp,
            config.CONFIG_DIR,
            config.MEMORY_FILE_PATH,
            config.MCP_START_TIMEOUT,
            config.TOOL_TIMEOUT,
            config.MEMORY_BACKEND,
            memory.provider,
            store.provider,
        ),
        demo=providers.Singleton(factories.demo_tools),
        none=providers.Singleton(factories.no_tools),
    )

    context = providers.Singleton(
        factories.context, config.MODEL_CONTEXT, config.MODEL_RESERVE, config.CONTEXT_TOOL_SHARE, config.CONTEXT_SUMMARY
    )
    usage_store = providers.Singleton(factories.usage_store, backend)
    meter = providers.Singleton(UsageMeter, usage_store, store, config.USER_DAILY_TOKENS, metrics=metrics)
    audit = providers.Singleton(factories.audit, backend, config.AUDIT_RETENTION_DAYS)
    # OTLP traces (OTEL_* variables; off without an endpoint): spans recorded with the steps,
    # shipped by the supervisor of any live process
    trace_config = providers.Dependency(instance_of=TraceConfig)
    tracer = providers.Singleton(factories.tracer, backend, trace_config)
    shipper = providers.Singleton(factories.shipper, backend, trace_config)  # closed by the supervisor
    # PDFs are read in worker processes of their own (one pool for chats, imports and collections)
    pdf_reader = providers.Resource(factories.pdf_reader, config.PDF_TIMEOUT, config.PDF_MEMORY, config.PDF_WORKERS)
    # each user's document collections, searched for a message that names one (#name)
    knowledge = providers.Singleton(
        KnowledgeService,
        backend.provided.knowledge.call(),
        pdf_reader,
        providers.Singleton(factories.knowledge_ranker, long_term_store),  # hybrid with EMBEDDING_MODEL
    )
    nodes = providers.Singleton(
        factories.nodes,
        model,
        tools,
        prompt,
        store,
        context,
        metrics,
        config.TOOL_APPROVAL,
        checkpointer,
        meter,
        tracer,
        knowledge,
        memory,
    )
    engine = providers.Singleton(factories.engine, nodes, checkpointer)
    threads = providers.Singleton(factories.threads, checkpointer)
    stores = providers.Singleton(factories.stores, store, threads, audit)

    catalog = providers.Singleton(ModelCatalog, model)
    presets = providers.Singleton(PresetService, backend.provided.presets.call(), catalog.provider, audit=audit)
    long_term = providers.Singleton(StoreService, long_term_store)  # each user's store (issue 45)
    intake = providers.Singleton(factories.intake, catalog, pdf_reader)
    unsaved = providers.Singleton(UnsavedOutcomes)  # outcomes the store refused, as reads show them
    run_service = providers.Singleton(
        RunService,
        catalog=catalog,
        intake=intake,
        stores=stores,
        engine=engine,
        processes=processes,
        recursion_limit=config.AGENT_RECURSION_LIMIT,
        lease_seconds=config.RUN_LEASE_SECONDS,
        metrics=metrics,
        user_max_active=config.USER_MAX_ACTIVE_RUNS,
        unsaved=unsaved,
        defaults=presets.provided.defaults_for,
        quota=meter,
    )
    queue = providers.Singleton(QueueService, run_service, store, config.MAX_QUEUED, audit)
    graph_runner = providers.Singleton(factories.graph_runner, graphs, checkpointer, long_term_store)
    hosted = providers.Singleton(HostedRuns, run_service, graph_runner.provider, graphs.provider, threads.provider, tracer)
    assistants = providers.Singleton(AssistantService, backend.provided.assistants.call(), graphs.provider)
    user_store = providers.Singleton(factories.users, backend)
    # runs' webhooks: delivered from the run store's outbox by the supervisor of any live process
    webhooks = providers.Singleton(
        WebhookService,
        store,
        providers.Singleton(factories.resolver),
        providers.Singleton(factories.webhook_sender, config.WEBHOOK_TIMEOUT_SECONDS),
        settings.provided.webhook_hosts,
        metrics,
        config.WEBHOOK_RETRY_SECONDS,
        config.WEBHOOK_TIMEOUT_SECONDS,
    )
    scheduler = providers.Singleton(Scheduler, run_service, queue, store, hosted=hosted.provider, users=user_store)
    schedules = providers.Singleton(ScheduleService, store, run_service, webhooks=webhooks)
    supervisor = providers.Singleton(
        Supervisor,
        service=providers.Singleton(GraphAwareRuns, run_service, hosted),
        auto_resume=config.AUTO_RESUME,
        event_retention=config.RUN_EVENT_RETENTION_SECONDS,
        approval_timeout=config.APPROVAL_TIMEOUT,
        after_runs=providers.Singleton(AfterRuns, store, threads, model.provider, config.AUTO_TITLE, meter=meter, tracer=tracer),
        audit=audit,
        scheduler=scheduler,
        webhooks=webhooks,
        traces=shipper,
        ship_seconds=trace_config.provided.schedule_delay,
    )
    import_worker = providers.Resource(conversation_factories.import_worker)  # an import's file read, in a process
    bulk_worker = providers.Resource(conversation_factories.bulk_worker)  # a zip made or unpacked, a copy's messages built
    conversations = providers.Singleton(
        conversation_factories.conversations,
        store,
        threads.provider,
        run_service.provider,
        catalog.provider,
        checkpointer.provider,
        bulk_worker.provider,
        unsaved,
        presets.provider,
        audit,
    )
    files = providers.Singleton(FileService, conversations, threads, checkpointer.provider)
    search_index = providers.Singleton(factories.search_index, backend, threads.provider)
    search = providers.Singleton(SearchService, search_index, store)
    allow_rules = providers.Singleton(AllowRules, store, audit)
    transfer = providers.Singleton(
        conversation_factories.transfer,
        store,
        threads.provider,
        checkpointer.provider,
        import_worker,
        bulk_worker.provider,
        pdf_reader,
        audit,
    )
    # the page's login sessions: in the run store's database, whichever it is
    session_store = providers.Singleton(factories.sessions, backend)
    proxy = providers.Singleton(
        factories.proxy, config.AUTH, config.PROXY_USER_HEADER, config.TRUSTED_PROXY_IPS, config.PROXY_AUTO_CREATE
    )
    sessions = providers.Singleton(
        SessionService,
        session_store,
        config.API_TOKEN,
        config.SESSION_SECONDS,
        users=user_store,
        admin_sees_all=config.ADMIN_SEES_ALL,
        proxy=proxy,
        audit=audit,
    )
    user_data = providers.Singleton(UserData, backend.provided.store.call(), backend.provided.knowledge.call())
    users = providers.Singleton(UserService, user_store, session_store, history=store, audit=audit)
    usage = providers.Singleton(UsageService, usage_store, user_store)
    user_deletion = providers.Singleton(
        UserDeletion, users, user_store, session_store, store, conversations, user_data, store, audit=audit
    )
    # what the edges get instead of this container (built once; each getter lazy)
    services = providers.Singleton(
        Services,
        runs=run_service.provider,
        queue=queue.provider,
        conversations=conversations.provider,
        supervisor=supervisor.provider,
        search=search.provider,
        allow_rules=allow_rules.provider,
        metrics=metrics.provider,
        model=model.provider,
        models=catalog.provider,
        tools=tools.provider,
        storage=storage.provider,
        backend=backend.provider,
        sessions=sessions.provider,
        users=users.provider,
        transfer=transfer.provider,
        bulk=bulk_worker.provider,
        files=files.provider,
        attachment_limits=settings.provided.attachment_limits,
        graphs=graphs.provider,
        hosted=hosted.provider,
        assistants=assistants.provider,
        presets=presets.provider,
        schedules=schedules.provider,
        webhook_service=webhooks.provider,
        usage=usage.provider,
        audit=audit.provider,
        store=long_term.provider,
        memory=memory.provider,
        knowledge=knowledge.provider,
        user_data=user_data.provider,
        user_deletion=user_deletion.provider,
        auto_title=config.AUTO_TITLE,
    )


def create_container(
    env: dict[str, str] | None = None,
    *,
    METRICS_BACKEND: str = "prometheus",  # noqa: N803
    **overrides: Any,
) -> Container:
    """A container configured from the environment (or `env`), with optional setting
    overrides (the CLI's --db, --model, --tools) and `METRICS_BACKEND="none"` for a process
    nobody scrapes; nothing is opened until first used."""
    settings = dataclasses.replace(load_settings(env), **overrides)
    try:
        traces = trace_config(os.environ if env is None else env)
    except ValueError as e:
        raise SettingsError(str(e)) from None
    container = Container(settings=providers.Object(settings), trace_config=providers.Object(traces))
    container.config.from_dict(
        {
            **dataclasses.asdict(settings),
            "STORAGE_BACKEND": settings.storage_backend,
            "METRICS_BACKEND": METRICS_BACKEND,
            "MODEL_MAX_TOKENS": settings.answer_limit,
        }
    )
    return container


async def close_container(container: Container) -> None:
    """Close each Resource that was opened: the tool servers, the model client and the database
    at once (none needs another to close), then reset them, so a second call closes nothing."""
    opened: list[providers.Resource[Any]] = [
        provider for provider in container.traverse(types=[providers.Resource]) if provider.initialized
    ]
    things: list[AsyncCloseable] = [provider() for provider in opened]
    outcomes = await asyncio.gather(*(thing.aclose() for thing in things), return_exceptions=True)
    for provider, thing, outcome in zip(opened, things, outcomes, strict=True):
        provider.shutdown()
        if isinstance(outcome, BaseException):
            log.error("closing %s failed", type(thing).__name__, exc_info=outcome)
