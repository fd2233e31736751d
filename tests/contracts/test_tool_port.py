"""The ToolPort contract, run against the static toolbox and MCP over stdio and HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.mcp.toolbox import McpToolbox
from adapters.memory.toolbox import StaticToolbox
from ports.tools import ToolPort, ToolSpec
from tests.support.app import ROOT, config_dir, ledger_server_entry, process_env
from tests.support.server import free_port

Keys = Callable[[], list[str]]


class ToolPortContract:
    """Each adapter offers `ledger__append(label)` (records its idempotency key) and
    `ledger__fail(reason)` (always fails)."""

    @pytest.fixture
    async def toolbox(self, tmp_path: Path) -> AsyncIterator[tuple[ToolPort, Keys]]:
        raise NotImplementedError
        yield  # pragma: no cover

    async def test_tools_are_listed_with_prefixed_names(self, toolbox: tuple[ToolPort, Keys]) -> None:
        port, _ = toolbox
        names = [t.name for t in await port.list_tools()]
        assert {"ledger__append", "ledger__fail"} <= set(names)
        assert names == [t.name for t in await port.list_tools()]  # stable order

    async def test_a_call_returns_its_text_and_carries_the_idempotency_key(self, toolbox: tuple[ToolPort, Keys]) -> None:
        port, keys = toolbox
        out = await port.call("ledger__append", {"label": "x"}, "conv:call-1")
        assert not out.is_error and "appended x" in out.content
        assert keys() == ["conv:call-1"]

    async def test_a_failing_tool_is_an_error_outcome_not_an_exception(self, toolbox: tuple[ToolPort, Keys]) -> None:
        port, _ = toolbox
        out = await port.call("ledger__fail", {"reason": "boom"}, "k")
        assert out.is_error and "boom" in out.content

    async def test_an_unknown_tool_is_an_error_outcome(self, toolbox: tuple[ToolPort, Keys]) -> None:
        port, _ = toolbox
        assert (await port.call("nope__tool", {}, "k")).is_error
        assert (await port.call("ledger__nope", {}, "k")).is_error

    async def test_status_reports_the_server_as_up_once_its_tools_are_listed(self, toolbox: tuple[ToolPort, Keys]) -> None:
        port, _ = toolbox
        await port.list_tools()
        statuses = await port.status()
        assert [s.ok for s in statuses if s.name == "ledger"] == [True]

    async def test_close_is_idempotent(self, toolbox: tuple[ToolPort, Keys]) -> None:
        port, _ = toolbox
        await port.aclose()
        await port.aclose()


def _ledger_keys(path: Path) -> Keys:
    def keys() -> list[str]:
        if not path.exists():
            return []
        return [e["key"] for e in map(json.loads, path.read_text().splitlines()) if e["event"] == "start"]

    return keys


class TestStaticToolbox(ToolPortContract):
    @pytest.fixture
    async def toolbox(self, tmp_path: Path) -> AsyncIterator[tuple[ToolPort, Keys]]:
        seen: list[str] = []

        async def append(args: Mapping[str, Any], key: str) -> str:
            seen.append(key)
            return f"appended {args['label']}"

        async def fail(args: Mapping[str, Any], key: str) -> str:
            raise ValueError(args["reason"])

        schema = {"type": "object", "properties": {}}
        box = StaticToolbox(
            [(ToolSpec("ledger__append", "", schema), append), (ToolSpec("ledger__fail", "", schema), fail)], server="ledger"
        )
        yield box, lambda: list(seen)


@pytest.mark.processes
class TestMcpOverStdio(ToolPortContract):
    @pytest.fixture
    async def toolbox(self, tmp_path: Path) -> AsyncIterator[tuple[ToolPort, Keys]]:
        book = tmp_path / "ledger.jsonl"
        box = McpToolbox(config_dir(tmp_path, {"ledger": ledger_server_entry(book)}), tmp_path / "memory.jsonl")
        yield box, _ledger_keys(book)
        await box.aclose()


@pytest.fixture
def http_ledger(tmp_path: Path) -> Iterator[tuple[str, Path, subprocess.Popen[bytes]]]:
    port, book = free_port(), tmp_path / "ledger.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.ledger_server", str(book), "--http", str(port)],
        env=process_env({}),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    yield url, book, proc
    proc.kill()
    proc.wait()


@pytest.mark.processes
class TestMcpOverStreamableHttp(ToolPortContract):
    @pytest.fixture
    async def toolbox(self, tmp_path: Path, http_ledger: Any) -> AsyncIterator[tuple[ToolPort, Keys]]:
        url, book, _ = http_ledger
        box = McpToolbox(config_dir(tmp_path, {"ledger": {"url": url}}), tmp_path / "memory.jsonl")
        yield box, _ledger_keys(book)
        await box.aclose()
