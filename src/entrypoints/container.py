"""The composition root: the only module that knows every adapter and wires them.

Adapters are imported inside their factories, so a command that only lists conversations
never loads LangGraph, LangChain or the MCP client (a cold `sophos conversations` stays fast).
"""

from __future__ import annotations

import logging
import sys
from importlib.abc import MetaPathFinder
from pathlib import Path
from typing import Any


class _SkipOptionalIntegrations(MetaPathFinder):
    """dependency-injector imports its optional integrations (pydantic-settings, Flask's
    werkzeug) if they are installed; Sophos uses neither, and skipping them takes about
    150 ms off every CLI start. Only active while dependency-injector itself loads."""

    SKIPPED = frozenset({"pydantic_settings", "werkzeug"})

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.partition(".")[0] in self.SKIPPED:
            raise ImportError(f"{name} skipped while dependency_injector loads")
        return None


_finder = _SkipOptionalIntegrations()
sys.meta_path.insert(0, _finder)
try:
    from dependency_injector import containers, providers
finally:
    sys.meta_path.remove(_finder)

from domain.conversations import ConversationService  # noqa: E402 - after the finder above
from domain.hub import RunHub  # noqa: E402 - after the finder above
from domain.runs import RunService  # noqa: E402 - after the finder above
from entrypoints.settings import load_settings  # noqa: E402 - after the finder above

log = logging.getLogger(__name__)


def _opened(factory: Any, opened: list[Any], *args: Any, **kwargs: Any) -> Any:
    """Build a thing that must be closed, and remember it for close_container()."""
    thing = factory(*args, **kwargs)
    opened.append(thing)
    return thing


def _run_repository(path: str) -> Any:
    from adapters.sqlite.runs import SqliteRunRepository

    return SqliteRunRepository(path)


def _checkpointer(path: str, keep: int) -> Any:
    from adapters.langgraph.checkpointer import ThreadedSqliteSaver

    return ThreadedSqliteSaver.open(path, keep=keep)


def _storage(path: str) -> Any:
    from adapters.sqlite.maintenance import SqliteMaintenance

    return SqliteMaintenance(path)


def _processes() -> Any:
    from adapters.system.processes import LocalProcesses

    return LocalProcesses()


def _prompt(config_dir: str) -> Any:
    from adapters.system.prompt import FilePrompt

    return FilePrompt(Path(config_dir) / "system.md")


def _ollama(**kwargs: Any) -> Any:
    from adapters.ollama.model import OllamaModel

    return OllamaModel(**kwargs)


def _openai(**kwargs: Any) -> Any:
    from adapters.openai.model import OpenAIModel

    return OpenAIModel(**kwargs)


def _demo_model() -> Any:
    from adapters.demo.model import DemoModel

    return DemoModel()


def _mcp(config_dir: str, memory_file: str) -> Any:
    from adapters.mcp.toolbox import McpToolbox

    return McpToolbox(Path(config_dir), Path(memory_file))


def _demo_tools() -> Any:
    from adapters.demo.tools import demo_toolbox

    return demo_toolbox()


def _no_tools() -> Any:
    from adapters.memory.toolbox import StaticToolbox

    return StaticToolbox()


def _graph(nodes: Any, checkpointer: Any) -> Any:
    from adapters.langgraph.graph import build_graph

    return build_graph(nodes, checkpointer)


def _nodes(**kwargs: Any) -> Any:
    from adapters.langgraph.graph import AgentNodes

    return AgentNodes(**kwargs)


def _threads(checkpointer: Any) -> Any:
    from adapters.langgraph.engine import LangGraphThreads

    # reading threads needs the graph's shape only: no model client, no MCP servers
    return LangGraphThreads(_graph(None, checkpointer))


class _LazyThreads:
    """A CheckpointPort built on first use: listing conversations never loads LangGraph."""

    def __init__(self, build: Any) -> None:
        self._build = build

    def __getattr__(self, name: str) -> Any:
        return getattr(self._build(), name)


def _is_active(run_service: Any) -> Any:
    return lambda conversation_id: run_service().is_active(conversation_id)


def _engine(graph: Any) -> Any:
    from adapters.langgraph.engine import LangGraphEngine

    return LangGraphEngine(graph)


class Container(containers.DeclarativeContainer):
    config = providers.Configuration(strict=True)

    opened = providers.Singleton(list)
    hub = providers.Singleton(RunHub)
    processes = providers.Singleton(_processes)
    run_repository = providers.Singleton(_opened, _run_repository, opened, config.DATABASE_PATH)
    checkpointer = providers.Singleton(_opened, _checkpointer, opened, config.DATABASE_PATH, config.CHECKPOINT_KEEP)
    prompt = providers.Singleton(_prompt, config.CONFIG_DIR)
    storage = providers.Singleton(_storage, config.DATABASE_PATH)

    model = providers.Selector(
        config.MODEL_BACKEND,
        ollama=providers.Singleton(
            _ollama,
            base_url=config.OLLAMA_HOST,
            model=config.OLLAMA_MODEL,
            think=config.OLLAMA_THINK,
            timeout=config.MODEL_TIMEOUT,
        ),
        openai=providers.Singleton(
            _openai,
            base_url=config.OPENAI_BASE_URL,
            model=config.OPENAI_MODEL,
            api_key=config.OPENAI_API_KEY,
            timeout=config.MODEL_TIMEOUT,
        ),
        demo=providers.Singleton(_demo_model),
    )
    tools = providers.Selector(
        config.TOOLS_BACKEND,
        mcp=providers.Singleton(_opened, _mcp, opened, config.CONFIG_DIR, config.MEMORY_FILE_PATH),
        demo=providers.Singleton(_demo_tools),
        none=providers.Singleton(_no_tools),
    )

    nodes = providers.Singleton(_nodes, model=model, tools=tools, prompt=prompt, journal=run_repository)
    graph = providers.Singleton(_graph, nodes, checkpointer)
    threads = providers.Singleton(_threads, checkpointer)
    engine = providers.Singleton(_engine, graph)

    run_service = providers.Singleton(
        RunService,
        runs=run_repository,
        checkpoints=threads,
        engine=engine,
        processes=processes,
        hub=hub,
        recursion_limit=config.AGENT_RECURSION_LIMIT,
        lease_seconds=config.RUN_LEASE_SECONDS,
        journal=run_repository,
    )
    conversations = providers.Singleton(
        ConversationService,
        runs=run_repository,
        checkpoints=providers.Singleton(_LazyThreads, threads.provider),
        is_active=providers.Callable(_is_active, run_service.provider),
        journal=run_repository,
    )


def create_container(env: dict[str, str] | None = None, **overrides: Any) -> Container:
    """A container configured from the environment (or `env`), with optional setting
    overrides; nothing is opened until first used."""
    container = Container()
    settings = load_settings(env)
    settings.update(overrides)
    container.config.from_dict(settings)
    return container


async def close_container(container: Container) -> None:
    """Close what was opened, newest first: the tool servers, then the database."""
    opened: list[Any] = container.opened()
    while opened:
        thing = opened.pop()
        try:
            if hasattr(thing, "aclose"):
                await thing.aclose()
            else:
                thing.close()
        except Exception:
            log.exception("closing %s failed", type(thing).__name__)
