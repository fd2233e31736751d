"""The sidebar filter searches every conversation (not only the loaded page), shows
snippets with the matches marked (as text, never markup), and opens the conversation
scrolled to the message."""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import SHOTS
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama
from tests.support.server import LiveServer

FILLER = "a long answer about tides, harbours and the weather at sea. " * 24


def answer(body: dict[str, Any]) -> dict[str, Any]:
    asked = body["messages"][-1]["content"]
    return {"text": "Puffins nest in burrows on cliffs." if "puffins" in asked else "Noted."}


@pytest.fixture
def demo(tmp_path: Path, ollama: FakeOllama) -> Iterator[LiveServer]:
    ollama.responder = answer
    server = LiveServer(app_env(tmp_path, ollama.url, TOOLS_BACKEND="none"), tmp_path).start()
    yield server
    server.stop()


def chat(server: LiveServer, message: str, cid: str | None = None) -> str:
    started: str = server.post("/api/chat", {"message": message, **({"conversation": cid} if cid else {})}).json()["conversation"]
    deadline = time.monotonic() + 30
    while server.get(f"/api/conversations/{started}").json()["conversation"]["status"] != "completed":
        assert time.monotonic() < deadline, "the run did not finish"
        time.sleep(0.05)
    return started


def server_regenerate(server: LiveServer, cid: str) -> str:
    """Ask again for the last answer (a new branch), and wait until it is done; the title."""
    assert server.post("/api/chat", {"conversation": cid, "regenerate": True}).status_code == 200
    deadline = time.monotonic() + 30
    while (detail := server.get(f"/api/conversations/{cid}").json())["conversation"]["status"] != "completed":
        assert time.monotonic() < deadline, "the run did not finish"
        time.sleep(0.05)
    assert detail["branchCount"] == 2
    title: str = detail["conversation"]["title"]
    return title


def test_the_filter_searches_every_conversation_and_opens_the_message(browser: Browser, demo: LiveServer) -> None:
    target = chat(demo, "Where do puffins nest in summer?")
    for i in range(4):  # a long conversation: the page opens at its end
        chat(demo, f"{i} {FILLER}", target)
    chat(demo, 'A trap: <img src=x onerror="window.pwned=1"> albatross')
    regenerated = server_regenerate(demo, chat(demo, "Gannets dive for fish"))  # its first answer: another branch
    db = sqlite3.connect(demo.env["DATABASE_PATH"])  # newer conversations: the target is not on the first page
    with db:
        db.executemany(
            "INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
            [(str(uuid.uuid4()), f"filler {i}", "2099-01-01T00:00:00Z", f"2099-01-01T00:00:{i:02d}Z") for i in range(55)],
        )
    db.close()

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page: Page = context.new_page()
    errors: list[Any] = []
    page.on("pageerror", lambda e: errors.append(e))
    page.goto(demo.url)
    expect(page.get_by_test_id("conversation-list").locator("li.conversation-item")).to_have_count(50)
    expect(page.get_by_test_id(f"conversation-{target}")).to_have_count(0)  # not loaded

    page.get_by_test_id("search").press_sequentially("puffi", delay=40)  # as it is typed: no `*` needed
    results = page.get_by_test_id("search-result")
    expect(results).to_have_count(1)  # one row for the conversation (issue 33 item 15)...
    expect(results.get_by_test_id("search-more")).to_have_text("+2 more")  # ...of its title, question and answer
    expect(page.get_by_test_id("conversation-list")).to_be_hidden()  # the results replace the titles
    expect(page.get_by_test_id("sidebar")).not_to_contain_text("No title matches")
    best = results.locator(":scope > [data-testid=search-hit]")
    expect(best.locator(".where")).not_to_have_text("title")  # the best message match
    expect(results.locator(".search-others")).to_be_hidden()
    page.screenshot(path=str(SHOTS / "search-results-1280.png"))
    results.get_by_test_id("search-more").click()
    expect(results.locator(".search-others [data-testid=search-hit]")).to_have_count(2)
    expect(results.locator(".search-others")).to_be_visible()
    user_hit = results.get_by_test_id("search-hit").filter(has_text="user")
    expect(user_hit.locator("mark")).to_have_text("puffins")
    user_hit.click()
    expect(page.get_by_test_id("current-title")).to_contain_text("puffins")
    message = page.locator('#messages [data-index="0"]')
    expect(message).to_have_class("msg user found")
    expect(message).to_be_in_viewport()
    assert page.locator("#messages").evaluate("n => n.scrollTop < n.scrollHeight - n.clientHeight - 100")
    page.screenshot(path=str(SHOTS / "search-opened-1280.png"))

    page.get_by_test_id("search").fill("albatross")
    snippet = results.first.locator(".snippet").first
    expect(snippet).to_contain_text('<img src=x onerror="window.pwned=1">')
    expect(page.get_by_test_id("search-results").locator("img")).to_have_count(0)
    assert page.evaluate("window.pwned") is None

    page.get_by_test_id("search").fill('"gannets di')  # a phrase being typed
    expect(results).to_have_count(1)
    expect(results.first).to_contain_text(regenerated)
    expect(page.get_by_test_id("search-unsearched")).to_have_text(
        "Not searched: 1 inactive branch of 1 conversation (only the branch each shows is searched)."
    )
    page.get_by_test_id("search").fill("gan*nets")
    expect(page.get_by_test_id("search-results")).to_contain_text("'*' may only end a word or a phrase")
    page.get_by_test_id("search").fill("")
    expect(page.get_by_test_id("search-results")).to_be_hidden()
    expect(page.get_by_test_id("conversation-list")).to_be_visible()
    context.close()

    mobile = browser.new_context(viewport={"width": 375, "height": 800})
    small = mobile.new_page()
    small.on("pageerror", lambda e: errors.append(e))
    small.goto(demo.url)
    small.get_by_test_id("menu-button").click()  # on a phone the sidebar folds behind the menu
    small.get_by_test_id("search").fill("puffin*")
    expect(small.get_by_test_id("search-result")).to_have_count(1)
    small.screenshot(path=str(SHOTS / "search-results-375.png"), full_page=True)
    mobile.close()
    assert errors == [], errors
