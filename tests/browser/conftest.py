"""Browser tests: Debian's Chromium driven by Playwright against a real `sophos serve`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.support.app import ROOT, app_env, config_dir, ledger_server_entry
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.server import LiveServer

CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "test-results" / "browser"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")  # Playwright's sync API holds an event loop: release it after this module
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with fake_ollama() as fake:
        yield fake


class App:
    def __init__(self, tmp: Path, ollama: FakeOllama) -> None:
        config_dir(tmp, {"ledger": ledger_server_entry(tmp / "ledger.jsonl")})
        self.env = app_env(tmp, ollama.url, SHUTDOWN_TIMEOUT="2")
        self.tmp = tmp
        self.server = tools_up(LiveServer(self.env, tmp).start())

    def restart(self, kill: bool = True) -> None:
        port = self.server.port
        if kill:
            self.server.kill()
        else:
            self.server.stop()
        self.server = tools_up(LiveServer(self.env, self.tmp, port).start())


def tools_up(server: LiveServer, timeout: float = 60) -> LiveServer:
    """Wait until readyz reports every tool server up: servers start in the background, and
    the page shows what readyz says when it loads."""
    deadline = time.monotonic() + timeout
    while not all(t["ok"] for t in server.get("/api/readyz").json().get("tools", [])):
        assert time.monotonic() < deadline, "the tool servers did not start"
        time.sleep(0.1)
    return server


@pytest.fixture
def app(tmp_path: Path, ollama: FakeOllama) -> Iterator[App]:
    a = App(tmp_path, ollama)
    yield a
    a.server.stop()


@pytest.fixture
def page(browser: Browser, app: App, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    pg = context.new_page()
    errors: list[Any] = []
    pg.on("pageerror", lambda e: errors.append(e))
    pg.goto(app.server.url)
    yield pg
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / f"{request.node.name}.png"), full_page=True)
    context.close()
    assert errors == [], errors  # no script error on the page
