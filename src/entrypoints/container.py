"""The composition root: the only module that knows every adapter and wires them."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from dependency_injector import containers, providers

from adapters.demo.model import DemoModel
from adapters.demo.tools import demo_toolbox
from adapters.langgraph.checkpointer import ThreadedSqliteSaver
from adapters.langgraph.engine import LangGraphEngine, LangGraphThreads
from adapters.langgraph.graph import AgentNodes, build_graph
from adapters.mcp.toolbox import McpToolbox
from adapters.memory.toolbox import StaticToolbox
from adapters.ollama.model import OllamaModel
from adapters.sqlite.runs import SqliteRunRepository
from adapters.system.processes import LocalProcesses
from adapters.system.prompt import FilePrompt
from domain.conversations import ConversationService
from domain.hub import RunHub
from domain.runs import RunService
from entrypoints.settings import load_settings

log = logging.getLogger(__name__)


def _opened(factory: Any, opened: list[Any], *args: Any, **kwargs: Any) -> Any:
    """Build a thing that must be closed, and remember it for close_container()."""
    thing = factory(*args, **kwargs)
    opened.append(thing)
    return thing


def _openai_model(**kwargs: Any) -> Any:
    from adapters.openai.model import OpenAIModel  # imported only when selected

    return OpenAIModel(**kwargs)


class Container(containers.DeclarativeContainer):
    config = providers.Configuration(strict=True)

    opened = providers.Singleton(list)
    hub = providers.Singleton(RunHub)
    processes = providers.Singleton(LocalProcesses)
    run_repository = providers.Singleton(
        _opened, SqliteRunRepository, opened, path=config.DATABASE_PATH
    )
    checkpointer = providers.Singleton(
        _opened, ThreadedSqliteSaver.open, opened, path=config.DATABASE_PATH
    )
    prompt = providers.Singleton(
        lambda d: FilePrompt(Path(d) / "system.md"), config.CONFIG_DIR
    )

    model = providers.Selector(
        config.MODEL_BACKEND,
        ollama=providers.Singleton(
            OllamaModel,
            base_url=config.OLLAMA_HOST,
            model=config.OLLAMA_MODEL,
            think=config.OLLAMA_THINK,
            timeout=config.MODEL_TIMEOUT,
        ),
        openai=providers.Singleton(
            _openai_model,
            base_url=config.OPENAI_BASE_URL,
            model=config.OPENAI_MODEL,
            api_key=config.OPENAI_API_KEY,
            timeout=config.MODEL_TIMEOUT,
        ),
        demo=providers.Singleton(DemoModel),
    )
    tools = providers.Selector(
        config.TOOLS_BACKEND,
        mcp=providers.Singleton(
            _opened,
            lambda d, m: McpToolbox(Path(d), Path(m)),
            opened,
            config.CONFIG_DIR,
            config.MEMORY_FILE_PATH,
        ),
        demo=providers.Singleton(demo_toolbox),
        none=providers.Singleton(StaticToolbox),
    )

    nodes = providers.Singleton(AgentNodes, model=model, tools=tools, prompt=prompt, journal=run_repository)
    graph = providers.Singleton(build_graph, nodes, checkpointer)
    # reading threads needs the graph's shape only: no model client, no MCP servers
    read_graph = providers.Singleton(build_graph, None, checkpointer)
    threads = providers.Singleton(LangGraphThreads, read_graph)
    engine = providers.Singleton(LangGraphEngine, graph)

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
        checkpoints=threads,
        is_active=run_service.provided.is_active,
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
