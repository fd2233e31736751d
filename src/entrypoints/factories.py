"""The adapters' factories the container (entrypoints/container.py) wires: each imports its
adapter when first called, so a command that only lists conversations never loads LangGraph,
LangChain or the MCP client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from domain.approvals import parse_mode
from domain.context import ContextPolicy
from domain.principals import ProxyTrust
from ports.approvals import ArgsChecker
from ports.attachments import TextExtractor
from ports.backend import RunStore
from ports.checkpoints import CheckpointPort
from ports.embeddings import EmbeddingPort
from ports.engine import AgentEngine
from ports.graphs import GraphRunner
from ports.knowledge import Ranker
from ports.metrics import MetricsPort
from ports.model import ModelPort
from ports.processes import ProcessPort
from ports.prompts import SystemPromptSource
from ports.search import SearchIndex
from ports.sessions import SessionStore
from ports.storage import StoragePort
from ports.store import StorePort
from ports.tools import ToolPort
from ports.usage import UsageStore
from ports.users import UserStore
from ports.webhooks import AddressResolver, WebhookSender
from services.approvals import ApprovalGate
from services.attachments import FileIntake
from services.audit import AuditTrail
from services.handles import RunStores
from services.knowledge import KnowledgeService
from services.memory import MemoryService, MemoryTools
from services.models import ModelCatalog
from services.usage import UsageMeter

if TYPE_CHECKING:
    from adapters.graphs.catalog import LangGraphJsonCatalog
    from adapters.langgraph.graph import AgentNodes
    from adapters.langgraph.saver import Saver
    from adapters.memory.backend import MemoryBackend
    from adapters.otel.config import TraceConfig
    from adapters.postgres.backend import PostgresBackend
    from adapters.prometheus.metrics import PrometheusMetrics
    from adapters.sqlite.backend import SqliteBackend
    from services.traces import RunTracer, TraceShipper

    # the concrete classes: each one's saver is also LangGraph's, which the engine needs
    StorageBackend = SqliteBackend | PostgresBackend | MemoryBackend

# Each thing that holds a connection, a pool or a process is a `providers.Resource` made by a
# one-step generator: the Resource records that it was opened (lazily, on first use) and
# close_container() closes exactly those. The teardown is not after the `yield` because it is
# async: an async Resource hands its dependents futures instead of objects (dependency-injector
# 4.49 turns every Singleton that injects one into an awaitable), and Sophos builds its graph
# lazily and synchronously so that `sophos conversations` never starts a tool server.


def prometheus() -> PrometheusMetrics:
    from adapters.prometheus.metrics import PrometheusMetrics

    return PrometheusMetrics()


def sqlite_backend(path: str, busy_timeout: float, keep: int, metrics: MetricsPort) -> Iterator[StorageBackend]:
    from adapters.sqlite.backend import SqliteBackend

    yield SqliteBackend(path, busy_timeout=busy_timeout, keep=keep, metrics=metrics)


def postgres_backend(
    url: str, pool_size: int, wait_timeout: float, keep: int, processes: ProcessPort
) -> Iterator[StorageBackend]:
    from adapters.postgres.backend import PostgresBackend

    yield PostgresBackend(url, pool_size=pool_size, wait_timeout=wait_timeout, keep=keep, owner=processes.current())


def memory_backend() -> StorageBackend:
    from adapters.memory.backend import MemoryBackend

    return MemoryBackend()


def saver(backend: StorageBackend) -> Saver:
    return backend.saver()


def run_store(backend: StorageBackend) -> RunStore:
    return backend.runs()


def maintenance(backend: StorageBackend) -> StoragePort:
    return backend.maintenance()


def search_index(backend: StorageBackend, threads: Callable[[], CheckpointPort]) -> SearchIndex:
    return backend.search(threads)


def processes() -> ProcessPort:
    from adapters.system.processes import LocalProcesses

    return LocalProcesses()


def graphs(path: str) -> LangGraphJsonCatalog:
    """The graphs of LANGGRAPH_JSON, imported (their env and dependencies applied): the
    first use is at start-up, so a graph that fails stops it (GraphLoadFailed)."""
    from adapters.graphs.catalog import LangGraphJsonCatalog

    return LangGraphJsonCatalog.load(path) if path else LangGraphJsonCatalog.empty()


def graph_runner(catalog: LangGraphJsonCatalog, checkpointer: Saver, store: StorePort) -> GraphRunner:
    """The hosted graphs run on the backend's saver (fenced by the run), their nodes' store
    the server's, as the thread's owner sees it (the `/store/*` API's and the memory tools')."""
    from adapters.graphs.runner import CatalogGraphRunner
    from adapters.graphs.store import OwnedStore

    return CatalogGraphRunner(catalog, checkpointer, lambda owner: OwnedStore(store, owner))


def prompt(config_dir: str) -> SystemPromptSource:
    from adapters.system.prompt import FilePrompt

    return FilePrompt(Path(config_dir) / "system.md")


def ollama(
    base_url: str,
    model: str,
    think: str,
    timeout: float,
    context: int,
    transport: str,
    max_tokens: int,
    tool_choice: str,
) -> Iterator[ModelPort]:
    from adapters.ollama.model import OllamaModel

    yield OllamaModel(base_url, model, think, timeout, context, transport, max_tokens, tool_choice or None)


def openai(
    base_url: str, model: str, api_key: str, timeout: float, transport: str, max_tokens: int, tool_choice: str
) -> Iterator[ModelPort]:
    from adapters.openai.model import OpenAIModel

    yield OpenAIModel(base_url, model, api_key, timeout, transport, max_tokens, tool_choice or None)


def long_term_store(
    backend: StorageBackend, model_backend: str, model: str, ollama_host: str, openai_url: str, api_key: str, timeout: float
) -> Iterator[StorePort]:
    """The backend's store, with semantic search when EMBEDDING_MODEL names a model on the
    chat model's server (none on the offline demo backend); closed with the container."""
    from services.semantic_store import SemanticStore

    embeddings: EmbeddingPort | None = None
    if model and model_backend == "ollama":
        from adapters.embeddings.http import OllamaEmbeddings

        embeddings = OllamaEmbeddings(ollama_host, model, timeout)
    elif model and model_backend == "openai":
        from adapters.embeddings.http import OpenAIEmbeddings

        embeddings = OpenAIEmbeddings(openai_url, model, timeout, api_key)
    yield SemanticStore(backend.store(), embeddings)


def knowledge_ranker(store: StorePort) -> Ranker | None:
    """With EMBEDDING_MODEL, a collection's passages are ranked hybrid, on the store's
    embedding model (services.retrieval.HybridOrder); without, in the full-text order."""
    from services.retrieval import HybridOrder
    from services.semantic_store import SemanticStore

    embeddings = store.embeddings if isinstance(store, SemanticStore) else None
    return HybridOrder(embeddings) if embeddings is not None else None


def demo_model() -> ModelPort:
    from adapters.demo.model import DemoModel

    return DemoModel()


def mcp(
    config_dir: str,
    memory_file: str,
    start_timeout: float,
    call_timeout: float,
    memory_backend: str = "mcp-file",
    memory: Callable[[], MemoryService] | None = None,
    runs: Callable[[], RunStore] | None = None,
) -> Iterator[ToolPort]:
    """The servers of mcp.json; with MEMORY_BACKEND=store, its `memory` entry (when it has
    one, enabled) is served by Sophos's own memory tools over the store instead."""
    from adapters.mcp.config import McpConfigError, load_mcp_config
    from adapters.mcp.toolbox import McpToolbox

    try:
        own = memory_backend == "store" and "memory" in load_mcp_config(Path(config_dir), Path(memory_file)).servers
    except McpConfigError:
        own = False  # the toolbox reports the file's error
    box = McpToolbox(
        Path(config_dir),
        Path(memory_file),
        call_timeout=call_timeout,
        start_timeout=start_timeout,
        leave_out=frozenset({"memory"}) if own else frozenset(),
    )
    if not own or memory is None or runs is None:
        yield box
        return
    store = runs

    async def owner_of(conversation_id: str) -> str | None:
        found = await store().get_conversation(conversation_id)
        return found.owner if found is not None else None

    yield MemoryTools(box, memory(), owner_of)


def demo_tools() -> ToolPort:
    from adapters.demo.tools import demo_toolbox

    return demo_toolbox()


def no_tools() -> ToolPort:
    from adapters.memory.toolbox import StaticToolbox

    return StaticToolbox()


def context(window: int, reserve: int, tool_share: float, summaries: bool) -> ContextPolicy:
    return ContextPolicy(window, reserve, tool_share, summaries)


def nodes(
    model: ModelPort,
    tools: ToolPort,
    prompt: SystemPromptSource,
    journal: RunStore,
    context: ContextPolicy,
    metrics: MetricsPort,
    approval: str,
    files: Saver,
    usage: UsageMeter,
    tracer: RunTracer | None,
    knowledge: KnowledgeService | None = None,
    memory: MemoryService | None = None,
) -> AgentNodes:
    from adapters.langgraph.graph import AgentNodes
    from adapters.langgraph.knowledge import KnowledgePrompts

    async def owner_of(conversation_id: str) -> str | None:
        found = await journal.get_conversation(conversation_id)
        return found.owner if found is not None else None

    async def withheld(conversation_id: str) -> frozenset[str]:  # tool servers, by name
        owner = await owner_of(conversation_id)
        return frozenset() if memory is None or owner is None else await memory.withheld(owner)

    gate = ApprovalGate(journal, parse_mode(approval))
    return AgentNodes(
        model,
        tools,
        prompt,
        journal,
        context=context,
        metrics=metrics,
        gate=gate,
        files=files,
        usage=usage,
        tracer=tracer,
        knowledge=KnowledgePrompts(knowledge, owner_of) if knowledge is not None else None,
        withheld=withheld if memory is not None else None,
    )


def tracer(backend: StorageBackend, config: TraceConfig) -> RunTracer | None:
    """None when tracing is off (no OTLP endpoint): the nodes record no span."""
    if not config.on:
        return None
    from services.traces import RunTracer

    return RunTracer(backend.traces(), config.capture_content)


def shipper(backend: StorageBackend, config: TraceConfig) -> TraceShipper | None:
    """None when tracing is off: OpenTelemetry is not even imported."""
    if not config.on:
        return None
    from adapters.otel.sink import OtlpSpanSink
    from services.traces import TraceShipper

    return TraceShipper(backend.traces(), OtlpSpanSink(config), batch=config.batch)


def pdf_reader(seconds: float, memory: int, workers: int) -> Iterator[TextExtractor]:
    from adapters.files.pdf import PdfLimits, ProcessPdfExtractor

    yield ProcessPdfExtractor(PdfLimits(seconds, memory, workers))


def intake(catalog: ModelCatalog, extractor: TextExtractor) -> FileIntake:
    return FileIntake(extractor, catalog)


def args_checker() -> ArgsChecker:
    from adapters.schema.args import JsonSchemaArgs

    return JsonSchemaArgs()


def engine(nodes: AgentNodes, checkpointer: Saver) -> AgentEngine:
    from adapters.langgraph.engine import LangGraphEngine
    from adapters.langgraph.graph import build_graph

    return LangGraphEngine(build_graph(nodes, checkpointer), checkpointer)


def threads(checkpointer: Saver) -> CheckpointPort:
    from adapters.langgraph.engine import LangGraphThreads
    from adapters.langgraph.graph import build_graph

    # reading threads needs the graph's shape only: no model client, no MCP servers
    return LangGraphThreads(build_graph(None, checkpointer), checkpointer)


def stores(store: RunStore, threads: CheckpointPort, audit: AuditTrail) -> RunStores:
    return RunStores(
        runs=store,
        events=store,
        signals=store,
        journal=store,
        checkpoints=threads,
        approvals=store,
        checker=args_checker(),
        queue=store,
        audit=audit,
        webhooks=store,
    )


def sessions(backend: StorageBackend) -> SessionStore:
    return backend.sessions()


def users(backend: StorageBackend) -> UserStore:
    return backend.users()


def usage_store(backend: StorageBackend) -> UsageStore:
    return backend.usage()


def audit(backend: StorageBackend, retention_days: int) -> AuditTrail:
    return AuditTrail(backend.audit(), retention_days)


def proxy(auth: str, header: str, trusted: str, auto_create: bool) -> ProxyTrust | None:
    return ProxyTrust(header, trusted, auto_create) if auth == "proxy" else None


def resolver() -> AddressResolver:
    from adapters.webhooks.http import SystemResolver

    return SystemResolver()


def webhook_sender(timeout: float) -> WebhookSender:
    from adapters.webhooks.http import HttpxWebhookSender

    return HttpxWebhookSender(timeout)
