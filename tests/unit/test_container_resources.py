"""The container closes what it opened, and only that: each connection, pool, model client and
tool-server set is a dependency-injector Resource, opened on first use."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from dependency_injector import providers

from entrypoints.container import close_container, create_container


def _container(tmp_path: Path, **env: str):  # type: ignore[no-untyped-def]
    return create_container(
        {
            "DATABASE_PATH": str(tmp_path / "s.db"),
            "MODEL_BACKEND": "ollama",
            "TOOLS_BACKEND": "mcp",
            "OLLAMA_HOST": "http://127.0.0.1:9",
            **env,
        },
        METRICS_BACKEND="none",
    )


def _recording(thing: object, closed: list[str]):  # type: ignore[no-untyped-def]
    original = thing.aclose  # type: ignore[attr-defined]

    async def aclose() -> None:
        closed.append(type(thing).__name__)
        await original()

    return aclose


async def test_only_what_was_used_is_opened_and_everything_opened_is_closed(tmp_path: Path) -> None:
    container = _container(tmp_path)
    backend = container.backend()
    model = container.model()
    opened = {type(p()).__name__ for p in container.traverse(types=[providers.Resource]) if p.initialized}
    # the tool servers were never asked for: no process was started for them
    assert opened == {type(backend).__name__, type(model).__name__}

    closed: list[str] = []
    for thing in (backend, model):
        thing.aclose = _recording(thing, closed)  # type: ignore[method-assign]
    await close_container(container)
    assert sorted(closed) == sorted([type(backend).__name__, type(model).__name__])

    # closed means forgotten: a second close closes nothing, and the next use opens anew
    await close_container(container)
    assert len(closed) == 2
    assert container.backend() is not backend
    await close_container(container)


async def test_a_failing_close_is_logged_and_the_others_still_close(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    container = _container(tmp_path)
    backend = container.backend()
    model = container.model()
    closed: list[str] = []

    async def broken() -> None:
        raise OSError("the socket is gone")

    original = backend.aclose

    async def recorded() -> None:
        closed.append("backend")
        await original()

    model.aclose = broken  # type: ignore[method-assign]
    backend.aclose = recorded  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR):
        await close_container(container)
    assert closed == ["backend"]
    assert any("closing OllamaModel failed" in r.getMessage() for r in caplog.records)
    assert not any(p.initialized for p in container.traverse(types=[providers.Resource]))
