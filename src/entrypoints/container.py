"""The composition root: the only module that knows every adapter and wires them.

Adapters are imported inside their factories, so a command that only lists conversations
never loads LangGraph, LangChain or the MCP client (a cold `sophos conversations` stays fast).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from domain.approvals import parse_mode
from domain.context import ContextPolicy
from domain.principals import ProxyTrust
from entrypoints.bundle import Services
from entrypoints.di import containers, providers
from entrypoints.lazy import LazyCopies, LazyThreads
from entrypoints.settings import Settings, load_settings
from ports.approvals import ArgsChecker
from ports.attachments import TextExtractor
from ports.backend import RunStore
from ports.checkpoints import CheckpointPort
from ports.copies import ThreadCopies
from ports.engine import AgentEngine
from ports.metrics import MetricsPort, NullMetrics
from ports.model import ModelPort
from ports.processes import ProcessPort
from ports.prompts import SystemPromptSource
from ports.search import SearchIndex
from ports.sessions import SessionStore
from ports.storage import StoragePort
from ports.tools import ToolPort
from ports.users import UserStore
from ports.workers import Worker
from services.after_runs import AfterRuns
from services.allow_rules import AllowRules
from services.approvals import ApprovalGate
from services.attachments import FileIntake
from services.conversations import ConversationService
from services.files import FileService
from services.handles import RunStores
from services.models import ModelCatalog
from services.presets import PresetService
from services.queueing import QueueService
from services.runs import RunService
from services.search import SearchService
from services.sessions import SessionService
from services.supervisor import Supervisor
from services.transfer import TransferService
from services.unsaved import UnsavedOutcomes
from services.users import UserService

if TYPE_CHECKING:
    from adapters.graphs.catalog import LangGraphJsonCatalog
    from adapters.langgraph.graph import AgentNodes
    from adapters.langgraph.saver import Saver
    from adapters.memory.backend import MemoryBackend
    from adapters.postgres.backend import PostgresBackend
    from adapters.prometheus.metrics import PrometheusMetrics
    from adapters.sqlite.backend import SqliteBackend

    # the concrete classes: each one's saver is also LangGraph's, which the engine needs
    StorageBackend = SqliteBackend | PostgresBackend | MemoryBackend

log = logging.getLogger(__name__)

class AsyncCloseable(Protocol):
    """What a `providers.Resource` of this container provides: close_container() closes it."""

    async def aclose(self) -> None: ...


# Each thing that holds a connection, a pool or a process is a `providers.Resource` made by a
# one-step generator: the Resource records that it was opened (lazily, on first use) and
# close_container() closes exactly those. The teardown is not after the `yield` because it is
# async: an async Resource hands its dependents futures instead of objects (dependency-injector
# 4.49 turns every Singleton that injects one into an awaitable), and Sophos builds its graph
# lazily and synchronously so that `sophos conversations` never starts a tool server.


def _prometheus() -> PrometheusMetrics:
    from adapters.prometheus.metrics import PrometheusMetrics

    return PrometheusMetrics()


def _sqlite_backend(path: str, busy_timeout: float, keep: int, metrics: MetricsPort) -> Iterator[StorageBackend]:
    from adapters.sqlite.backend import SqliteBackend

    yield SqliteBackend(path, busy_timeout=busy_timeout, keep=keep, metrics=metrics)


def _postgres_backend(url: str, pool_size: int, wait_timeout: float, keep: int, processes: ProcessPort) -> Iterator[StorageBackend]:
    from adapters.postgres.backend import PostgresBackend

    yield PostgresBackend(url, pool_size=pool_size, wait_timeout=wait_timeout, keep=keep, owner=processes.current())


def _memory_backend() -> StorageBackend:
    from adapters.memory.backend import MemoryBackend

    return MemoryBackend()


def _saver(backend: StorageBackend) -> Saver:
    return backend.saver()


def _run_store(backend: StorageBackend) -> RunStore:
    return backend.runs()


def _maintenance(backend: StorageBackend) -> StoragePort:
    return backend.maintenance()


def _search_index(backend: StorageBackend, threads: Callable[[], CheckpointPort]) -> SearchIndex:
    return backend.search(threads)


def _processes() -> ProcessPort:
    from adapters.system.processes import LocalProcesses

    return LocalProcesses()


def _graphs(path: str) -> LangGraphJsonCatalog:
    """The graphs of LANGGRAPH_JSON, imported (their env and dependencies applied): the
    first use is at start-up, so a graph that fails stops it (GraphLoadFailed)."""
    from adapters.graphs.catalog import LangGraphJsonCatalog

    return LangGraphJsonCatalog.load(path) if path else LangGraphJsonCatalog.empty()


def _prompt(config_dir: str) -> SystemPromptSource:
    from adapters.system.prompt import FilePrompt

    return FilePrompt(Path(config_dir) / "system.md")


def _ollama(
    base_url: str, model: str, think: str, timeout: float, context: int, transport: str, max_tokens: int,
    tool_choice: str,
) -> Iterator[ModelPort]:
    from adapters.ollama.model import OllamaModel

    yield OllamaModel(base_url, model, think, timeout, context, transport, max_tokens, tool_choice or None)


def _openai(
    base_url: str, model: str, api_key: str, timeout: float, transport: str, max_tokens: int, tool_choice: str
) -> Iterator[ModelPort]:
    from adapters.openai.model import OpenAIModel

    yield OpenAIModel(base_url, model, api_key, timeout, transport, max_tokens, tool_choice or None)


def _demo_model() -> ModelPort:
    from adapters.demo.model import DemoModel

    return DemoModel()


def _mcp(config_dir: str, memory_file: str, start_timeout: float, call_timeout: float) -> Iterator[ToolPort]:
    from adapters.mcp.toolbox import McpToolbox

    yield McpToolbox(Path(config_dir), Path(memory_file), call_timeout=call_timeout, start_timeout=start_timeout)


def _demo_tools() -> ToolPort:
    from adapters.demo.tools import demo_toolbox

    return demo_toolbox()


def _no_tools() -> ToolPort:
    from adapters.memory.toolbox import StaticToolbox

    return StaticToolbox()


def _context(window: int, reserve: int, tool_share: float, summaries: bool) -> ContextPolicy:
    return ContextPolicy(window, reserve, tool_share, summaries)


def _nodes(
    model: ModelPort,
    tools: ToolPort,
    prompt: SystemPromptSource,
    journal: RunStore,
    context: ContextPolicy,
    metrics: MetricsPort,
    approval: str,
    files: Saver,
) -> AgentNodes:
    from adapters.langgraph.graph import AgentNodes

    gate = ApprovalGate(journal, parse_mode(approval))
    return AgentNodes(model, tools, prompt, journal, context=context, metrics=metrics, gate=gate, files=files)


def _pdf_reader(seconds: float, memory: int, workers: int) -> Iterator[TextExtractor]:
    from adapters.files.pdf import PdfLimits, ProcessPdfExtractor

    yield ProcessPdfExtractor(PdfLimits(seconds, memory, workers))


def _intake(catalog: ModelCatalog, extractor: TextExtractor) -> FileIntake:
    return FileIntake(extractor, catalog)


def _args_checker() -> ArgsChecker:
    from adapters.schema.args import JsonSchemaArgs

    return JsonSchemaArgs()


def _engine(nodes: AgentNodes, checkpointer: Saver) -> AgentEngine:
    from adapters.langgraph.engine import LangGraphEngine
    from adapters.langgraph.graph import build_graph

    return LangGraphEngine(build_graph(nodes, checkpointer), checkpointer)


def _threads(checkpointer: Saver) -> CheckpointPort:
    from adapters.langgraph.engine import LangGraphThreads
    from adapters.langgraph.graph import build_graph

    # reading threads needs the graph's shape only: no model client, no MCP servers
    return LangGraphThreads(build_graph(None, checkpointer), checkpointer)


def _stores(store: RunStore, threads: CheckpointPort) -> RunStores:
    return RunStores(runs=store, events=store, signals=store, journal=store, checkpoints=threads, approvals=store,
                     checker=_args_checker(), queue=store)


def _conversations(
    store: RunStore, threads: Callable[[], CheckpointPort], service: Callable[[], RunService],
    catalog: Callable[[], ModelCatalog], saver: Callable[[], Saver], worker: Callable[[], Worker],
    unsaved: UnsavedOutcomes, presets: Callable[[], PresetService],
) -> ConversationService:
    async def is_active(conversation_id: str) -> bool:
        return await service().is_active(conversation_id)

    lazy = LazyThreads(threads)
    copies = LazyCopies(lambda: _copies(threads(), saver(), worker()))
    return ConversationService(store, lazy, is_active, store, branches=lazy, approvals=store, copies=copies,
                               catalog=catalog, unsaved=unsaved, defaults=lambda user: presets().defaults_for(user))


def _copies(threads: CheckpointPort, saver: Saver, worker: Worker) -> ThreadCopies:
    from adapters.langgraph.copies import LangGraphCopies
    from adapters.langgraph.engine import LangGraphThreads

    assert isinstance(threads, LangGraphThreads)  # what _threads builds, on `saver`
    return LangGraphCopies(threads, saver, worker)


def _import_worker() -> Iterator[Worker]:
    from adapters.system.workers import WorkerThreads

    yield WorkerThreads("sophos-import")  # one import read at a time, whatever the number sent


def _bulk_worker() -> Iterator[Worker]:
    from adapters.system.workers import WorkerThreads

    # the zip of every conversation, an upload unpacked: asyncio's default executor is
    # storage's (LangGraph's PostgreSQL saver writes through it), a request's large work never goes there
    yield WorkerThreads("sophos-bulk", 2)


def _transfer(store: RunStore, threads: Callable[[], CheckpointPort], files: Callable[[], Saver],
              worker: Worker, extractor: TextExtractor) -> TransferService:
    return TransferService(store, LazyThreads(threads), LazyCopies(lambda: _copies(threads(), files(), worker)), store,
                           files=files, extractor=extractor, worker=worker)


def _sessions(backend: StorageBackend) -> SessionStore:
    return backend.sessions()


def _users(backend: StorageBackend) -> UserStore:
    return backend.users()


def _proxy(auth: str, header: str, trusted: str, auto_create: bool) -> ProxyTrust | None:
    return ProxyTrust(header, trusted, auto_create) if auth == "proxy" else None


class Container(containers.DeclarativeContainer):
    # the typed settings (for the edges), and the same values as a Configuration (for providers)
    settings = providers.Dependency(instance_of=Settings)
    config = providers.Configuration(strict=True)

    processes = providers.Singleton(_processes)
    # the server exposes its metrics at /metrics; one-shot CLI commands, which nobody
    # scrapes, record nothing (and never import prometheus-client)
    metrics: providers.Selector[MetricsPort] = providers.Selector(
        config.METRICS_BACKEND, prometheus=providers.Singleton(_prometheus), none=providers.Singleton(NullMetrics)
    )
    # one storage for everything, chosen once (settings.py decides STORAGE_BACKEND)
    backend: providers.Selector[StorageBackend] = providers.Selector(
        config.STORAGE_BACKEND,
        sqlite=providers.Resource(
            _sqlite_backend, config.DATABASE_PATH, config.DATABASE_BUSY_TIMEOUT, config.CHECKPOINT_KEEP, metrics
        ),
        postgres=providers.Resource(
            _postgres_backend, config.DATABASE_URL, config.DATABASE_POOL_SIZE, config.DATABASE_BUSY_TIMEOUT,
            config.CHECKPOINT_KEEP, processes,
        ),
        memory=providers.Singleton(_memory_backend),
    )
    checkpointer = providers.Singleton(_saver, backend)
    store = providers.Singleton(_run_store, backend)
    storage = providers.Singleton(_maintenance, backend)
    prompt = providers.Singleton(_prompt, config.CONFIG_DIR)
    graphs = providers.Singleton(_graphs, config.LANGGRAPH_JSON)

    model: providers.Selector[ModelPort] = providers.Selector(
        config.MODEL_BACKEND,
        ollama=providers.Resource(
            _ollama, config.OLLAMA_HOST, config.OLLAMA_MODEL, config.OLLAMA_THINK, config.MODEL_TIMEOUT,
            config.MODEL_CONTEXT, config.MODEL_TRANSPORT, config.MODEL_MAX_TOKENS, config.MODEL_TOOL_CHOICE,
        ),
        openai=providers.Resource(
            _openai, config.OPENAI_BASE_URL, config.OPENAI_MODEL, config.OPENAI_API_KEY, config.MODEL_TIMEOUT,
            config.MODEL_TRANSPORT, config.MODEL_MAX_TOKENS, config.MODEL_TOOL_CHOICE,
        ),
        demo=providers.Singleton(_demo_model),
    )
    tools: providers.Selector[ToolPort] = providers.Selector(
        config.TOOLS_BACKEND,
        mcp=providers.Resource(_mcp, config.CONFIG_DIR, config.MEMORY_FILE_PATH, config.MCP_START_TIMEOUT,
                               config.TOOL_TIMEOUT),
        demo=providers.Singleton(_demo_tools),
        none=providers.Singleton(_no_tools),
    )

    context = providers.Singleton(
        _context, config.MODEL_CONTEXT, config.MODEL_RESERVE, config.CONTEXT_TOOL_SHARE, config.CONTEXT_SUMMARY
    )
    nodes = providers.Singleton(_nodes, model, tools, prompt, store, context, metrics, config.TOOL_APPROVAL, checkpointer)
    engine = providers.Singleton(_engine, nodes, checkpointer)
    threads = providers.Singleton(_threads, checkpointer)
    stores = providers.Singleton(_stores, store, threads)

    catalog = providers.Singleton(ModelCatalog, model)
    presets = providers.Singleton(PresetService, backend.provided.presets.call(), catalog.provider)
    # PDFs are read in worker processes of their own (one pool for chats and imports)
    pdf_reader = providers.Resource(_pdf_reader, config.PDF_TIMEOUT, config.PDF_MEMORY, config.PDF_WORKERS)
    intake = providers.Singleton(_intake, catalog, pdf_reader)
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
    )
    queue = providers.Singleton(QueueService, run_service, store, config.MAX_QUEUED)
    supervisor = providers.Singleton(
        Supervisor,
        service=run_service,
        auto_resume=config.AUTO_RESUME,
        event_retention=config.RUN_EVENT_RETENTION_SECONDS,
        approval_timeout=config.APPROVAL_TIMEOUT,
        after_runs=providers.Singleton(AfterRuns, store, threads, model.provider, config.AUTO_TITLE),
    )
    import_worker = providers.Resource(_import_worker)  # an import's file read and its messages built
    conversations = providers.Singleton(_conversations, store, threads.provider, run_service.provider, catalog.provider,
                                        checkpointer.provider, import_worker.provider, unsaved, presets.provider)
    files = providers.Singleton(FileService, conversations, threads, checkpointer.provider)
    search_index = providers.Singleton(_search_index, backend, threads.provider)
    search = providers.Singleton(SearchService, search_index, store)
    allow_rules = providers.Singleton(AllowRules, store)
    transfer = providers.Singleton(_transfer, store, threads.provider, checkpointer.provider, import_worker, pdf_reader)
    bulk_worker = providers.Resource(_bulk_worker)
    # the page's login sessions: in the run store's database, whichever it is
    session_store = providers.Singleton(_sessions, backend)
    user_store = providers.Singleton(_users, backend)
    proxy = providers.Singleton(_proxy, config.AUTH, config.PROXY_USER_HEADER, config.TRUSTED_PROXY_IPS,
                                config.PROXY_AUTO_CREATE)
    sessions = providers.Singleton(SessionService, session_store, config.API_TOKEN, config.SESSION_SECONDS,
                                   users=user_store, admin_sees_all=config.ADMIN_SEES_ALL, proxy=proxy)
    users = providers.Singleton(UserService, user_store, session_store, history=store)
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
        presets=presets.provider, auto_title=config.AUTO_TITLE,
    )


def create_container(env: dict[str, str] | None = None, *, METRICS_BACKEND: str = "prometheus",  # noqa: N803
                     **overrides: Any) -> Container:
    """A container configured from the environment (or `env`), with optional setting
    overrides (the CLI's --db, --model, --tools) and `METRICS_BACKEND="none"` for a process
    nobody scrapes; nothing is opened until first used."""
    settings = dataclasses.replace(load_settings(env), **overrides)
    container = Container(settings=providers.Object(settings))
    container.config.from_dict({
        **dataclasses.asdict(settings), "STORAGE_BACKEND": settings.storage_backend, "METRICS_BACKEND": METRICS_BACKEND,
        "MODEL_MAX_TOKENS": settings.answer_limit,
    })
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
