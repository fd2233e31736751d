"""Browser tests: Debian's Chromium driven by Playwright against a real `sophos serve`."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.support.app import ROOT, app_env, config_dir, ledger_server_entry
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.server import LiveServer

CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "test-results" / "browser"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


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
    def __init__(self, tmp: Path, ollama: FakeOllama | None, **env: str) -> None:
        config_dir(tmp, {"ledger": ledger_server_entry(tmp / "ledger.jsonl")})
        self.env = app_env(tmp, ollama.url if ollama else "http://127.0.0.1:9", SHUTDOWN_TIMEOUT="2", **env)
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


@contextlib.contextmanager
def open_page(browser: Browser, url: str, name: str, **context_options: Any) -> Iterator[Page]:
    """A fresh browser context on `url`; a screenshot at the end, a failed test's too
    (`<name>.png`); no script error allowed."""
    context = browser.new_context(**{"viewport": {"width": 1280, "height": 800}, **context_options})
    pg = context.new_page()
    errors: list[Any] = []
    pg.on("pageerror", lambda e: errors.append(e))
    try:
        pg.goto(url)
        yield pg
    finally:
        SHOTS.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(Exception):  # the page may be gone: the test's own error stands
            pg.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
        context.close()
    assert errors == [], errors  # no script error on the page


def drawn(page: Page, timeout: float = 15000) -> None:
    """Wait until the conversation on screen is drawn from the server with no run streaming
    into it: the page keeps the message list `aria-busy` while a run streams and until the
    re-read that follows its end is drawn. A one-shot read of a node (a style, a size, a mark)
    made before then may meet a node that the redraw replaces."""
    expect(page.get_by_test_id("message-list")).to_have_attribute("aria-busy", "false", timeout=timeout)


def shoot(page: Page, item: str, narrow: Callable[[Page], Any] | None = None) -> None:
    """Screenshots of the page as it is, at 1280×800 and at 375 px wide:
    test-results/browser/<item>-1280.png and <item>-375.png. `narrow` prepares the narrow
    one (and undoes itself when called again), e.g. opens the folded sidebar."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size
    page.set_viewport_size({"width": 1280, "height": 800})
    page.screenshot(path=str(SHOTS / f"{item}-1280.png"))
    page.set_viewport_size({"width": 375, "height": 740})
    if narrow is not None:
        narrow(page)
    page.wait_for_timeout(300)  # the sidebar slides in or out
    page.screenshot(path=str(SHOTS / f"{item}-375.png"))
    if narrow is not None:
        narrow(page)
    if size is not None:
        page.set_viewport_size(size)


def toggle_sidebar(page: Page) -> None:
    """Open the folded sidebar with the menu button, or close it by tapping beside it."""
    if page.get_by_test_id("menu-button").get_attribute("aria-expanded") == "true":
        page.mouse.click(370, 400)
    else:
        page.get_by_test_id("menu-button").click()


@pytest.fixture
def page(browser: Browser, app: App, request: pytest.FixtureRequest) -> Iterator[Page]:
    with open_page(browser, app.server.url, request.node.name) as pg:
        yield pg


@pytest.fixture(scope="module")
def shared_ollama() -> Iterator[FakeOllama]:
    with fake_ollama() as fake:
        yield fake


@pytest.fixture(scope="module")
def shared_app(tmp_path_factory: pytest.TempPathFactory, shared_ollama: FakeOllama) -> Iterator[App]:
    """One server for a whole module: its tests share the database, so each uses its own texts."""
    a = App(tmp_path_factory.mktemp("shared"), shared_ollama)
    yield a
    a.server.stop()


@pytest.fixture
def tab(browser: Browser, shared_app: App, shared_ollama: FakeOllama, request: pytest.FixtureRequest) -> Iterator[Page]:
    shared_ollama.replies.clear()
    with open_page(browser, shared_app.server.url, request.node.name) as pg:
        pg.get_by_test_id("new-chat-button").click()  # the page opened the latest conversation
        yield pg
