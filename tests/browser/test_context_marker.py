"""The page shows where the model's view of a long conversation begins, and the summary it
was given in place of the older messages."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import SHOTS
from tests.support.app import app_env, config_dir
from tests.support.fake_ollama import FakeOllama
from tests.support.server import LiveServer

LONG = "a long message about the garden and the weather " * 25  # ~1200 characters


@pytest.fixture
def small_context(tmp_path: Path, ollama: FakeOllama) -> Iterator[LiveServer]:
    config_dir(tmp_path)
    env = app_env(tmp_path, ollama.url, TOOLS_BACKEND="none", MODEL_CONTEXT="1024", MODEL_RESERVE="256", CONTEXT_SUMMARY="true")
    server = LiveServer(env, tmp_path).start()
    yield server
    server.stop()


def answer(body: dict[str, Any]) -> dict[str, Any]:
    if body["messages"][0]["content"].startswith("You summarize"):
        return {"text": "They talked about the garden."}
    return {"text": "Noted."}


def test_the_marker_shows_where_the_model_view_begins(browser: Browser, small_context: LiveServer, ollama: FakeOllama) -> None:
    ollama.responder = answer
    cid = None
    for i in range(4):
        body = {"message": f"{i} {LONG}", **({"conversation": cid} if cid else {})}
        cid = small_context.post("/api/chat", body).json()["conversation"]
        deadline = time.monotonic() + 20
        while small_context.get(f"/api/conversations/{cid}").json()["conversation"]["status"] != "completed":
            assert time.monotonic() < deadline, "the run did not finish"
            time.sleep(0.05)
    detail = small_context.get(f"/api/conversations/{cid}").json()
    view = detail["context"]
    assert view["sentFrom"] > 0
    page: Page = browser.new_context(viewport={"width": 1200, "height": 800}).new_page()
    errors: list[Any] = []
    page.on("pageerror", lambda e: errors.append(e))
    page.goto(small_context.url)
    marker = page.get_by_test_id("context-marker")
    expect(marker).to_have_count(1)
    expect(marker).to_contain_text("The model no longer sees the messages above")
    # the marker sits right before the first message the model saw
    before = marker.evaluate("n => n.nextElementSibling.textContent")
    assert before == detail["messages"][view["sentFrom"]]["content"]
    summary = page.get_by_test_id("summary-message")
    expect(summary.first).to_contain_text("Summary of the first")
    summary.first.locator("summary").click()
    expect(summary.first).to_contain_text("They talked about the garden.")
    marker.scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "test_the_marker_shows_where_the_model_view_begins.png"), full_page=True)
    page.context.close()
    assert errors == []
