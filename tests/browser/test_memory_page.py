""" "What Sophos remembers about you" on the page (issue 45 item 2), in Chromium against a
real server and the fake Ollama: a memory the agent's memory__remember tool wrote in a
conversation is listed in the settings panel, edited and forgotten in place."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import App, open_page
from tests.browser.test_organising import send
from tests.browser.test_presets import settings
from tests.integration.test_memory import SHIPPED_MEMORY, answer
from tests.support.app import config_dir
from tests.support.fake_ollama import FakeOllama


@pytest.fixture
def memory_app(tmp_path: Path, ollama: FakeOllama) -> Iterator[App]:
    ollama.responder = answer
    (tmp_path / "memory-config").mkdir()
    config = config_dir(tmp_path / "memory-config", {"memory": SHIPPED_MEMORY})
    a = App(tmp_path, ollama, CONFIG_DIR=str(config))
    yield a
    a.server.stop()


@pytest.fixture
def page(browser: Browser, memory_app: App, request: pytest.FixtureRequest) -> Iterator[Page]:
    with open_page(browser, memory_app.server.url, request.node.name) as pg:
        yield pg


def test_what_sophos_remembers_is_listed_edited_and_forgotten_in_the_settings(page: Page, memory_app: App) -> None:
    send(page, "remember my cat is called Miso")
    settings(page)
    page.get_by_test_id("memory-panel").locator("summary").click()
    texts = page.get_by_test_id("memory-text")
    expect(texts).to_have_count(1)
    expect(texts.first).to_have_value("my cat is called Miso")
    texts.first.fill("my cat is called Mochi")
    page.get_by_test_id("memory-save").click()
    expect(page.get_by_test_id("memory-note")).to_have_text("Saved")
    assert [m["text"] for m in memory_app.server.get("/api/memory").json()["memories"]] == ["my cat is called Mochi"]
    page.get_by_test_id("memory-forget").click()
    expect(page.get_by_test_id("memory-note")).to_have_text("Forgotten")
    expect(texts).to_have_count(0)
    expect(page.get_by_test_id("memory-empty")).to_be_visible()
    assert memory_app.server.get("/api/memory").json() == {"memories": [], "enabled": True}


def test_memory_turned_off_in_the_settings_withholds_the_memory_tools(page: Page, memory_app: App, ollama: FakeOllama) -> None:
    settings(page)
    page.get_by_test_id("memory-panel").locator("summary").click()
    switch = page.get_by_test_id("memory-enabled")
    expect(switch).to_be_checked()
    switch.uncheck()
    expect(page.get_by_test_id("memory-note")).to_have_text("Memory off: nothing new is remembered")
    assert memory_app.server.get("/api/memory").json()["enabled"] is False
    before = len(ollama.requests)
    send(page, "remember my cat is called Miso")
    sent = ollama.requests[before:]
    assert sent and all(not t["function"]["name"].startswith("memory__") for r in sent for t in r.get("tools") or [])
    # the fake model calls the tool all the same: it is refused, nothing is written
    assert "turned memory off" in sent[-1]["messages"][-1]["content"]
    assert memory_app.server.get("/api/memory").json()["memories"] == []
    page.reload()
    settings(page)
    page.get_by_test_id("memory-panel").locator("summary").click()
    expect(page.get_by_test_id("memory-enabled")).not_to_be_checked()
    page.get_by_test_id("memory-enabled").check()
    expect(page.get_by_test_id("memory-note")).to_have_text("Memory on")
    before = len(ollama.requests)
    send(page, "remember my cat is called Mochi")
    assert any(t["function"]["name"] == "memory__remember" for t in ollama.requests[before]["tools"])
