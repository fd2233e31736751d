"""Organising many chats on the page (issue 48 item 13), in Chromium against a real server
and the fake Ollama: pin and archive from the sidebar, the archive as a view of its own, a
temporary chat that is never listed and is deleted once the page leaves it, turn counts
instead of message counts, and the title the model writes after the first answer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from domain.organise import TITLE_SYSTEM
from tests.browser.conftest import App, drawn, open_page, shoot, toggle_sidebar
from tests.support.fake_ollama import FakeOllama


def send(page: Page, text: str) -> None:
    """Send `text` and wait for its answer to be drawn from the server."""
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("message-input").press("Enter")
    expect(page.get_by_test_id("message-input")).to_have_value("")
    expect(page.get_by_test_id("stop-button")).to_be_hidden(timeout=15000)
    drawn(page)


def row(page: Page, title: str) -> Any:
    return page.get_by_test_id("conversation-list").locator(".conversation-item", has_text=title)


def listed(app: App, query: str = "") -> list[str]:
    return [c["title"] for c in app.server.get(f"/api/conversations{query}").json()["conversations"]]


def test_pin_and_archive_from_the_sidebar_and_count_turns(page: Page, app: App, ollama: FakeOllama) -> None:
    for text in ("Alpha trip", "Beta budget", "Gamma garden"):
        page.get_by_test_id("new-chat-button").click()
        send(page, text)
    ollama.add({"tool_calls": [("ledger__charge", {"amount": 3})]}, {"text": "Charged."})
    send(page, "and the balance?")  # a tool call and its result: 6 messages, 2 turns
    gamma = row(page, "Gamma garden")
    expect(gamma.get_by_test_id("turn-count")).to_have_text("2 turns")
    expect(row(page, "Alpha trip").get_by_test_id("turn-count")).to_have_text("1 turn")
    expect(page.get_by_test_id("conversation-list")).not_to_contain_text("messages")
    # pinned: listed first, under its own heading, whatever is used since
    row(page, "Alpha trip").hover()
    row(page, "Alpha trip").get_by_test_id("pin-button").click()
    expect(page.get_by_test_id("pinned-group")).to_be_visible()
    expect(page.locator(".conversation-item .title").first).to_have_text("Alpha trip")
    expect(row(page, "Alpha trip").get_by_test_id("pin-button")).to_have_attribute("aria-pressed", "true")
    # archived: gone from the list, found in the archive, brought back
    row(page, "Beta budget").hover()
    row(page, "Beta budget").get_by_test_id("archive-button").click()
    expect(row(page, "Beta budget")).to_have_count(0)
    assert "Beta budget" not in listed(app) and listed(app, "?archived=true") == ["Beta budget"]
    shoot(page, "sidebar-pinned", toggle_sidebar)
    page.get_by_test_id("archive-view").click()
    expect(page.get_by_test_id("archive-heading")).to_be_visible()
    expect(page.locator(".conversation-item .title")).to_have_text(["Beta budget"])
    expect(page.get_by_test_id("pinned-group")).to_have_count(0)
    shoot(page, "sidebar-archive", toggle_sidebar)
    row(page, "Beta budget").hover()
    row(page, "Beta budget").get_by_test_id("archive-button").click()
    expect(page.locator("#list-state")).to_have_text("Nothing archived")
    page.get_by_test_id("archive-view").click()
    expect(row(page, "Beta budget")).to_have_count(1)
    page.reload()  # kept on the server
    expect(page.locator(".conversation-item .title").first).to_have_text("Alpha trip")


def test_a_temporary_chat_is_never_listed_and_goes_when_the_page_leaves_it(page: Page, app: App, ollama: FakeOllama) -> None:
    page.get_by_test_id("temporary-chat-button").click()
    expect(page.get_by_test_id("temporary-item")).to_contain_text("Temporary chat")
    send(page, "a secret question")
    expect(page.get_by_test_id("assistant-message")).to_have_text("Done.")
    expect(page.get_by_test_id("temporary-item")).to_contain_text("Not kept")
    cid = page.evaluate("() => document.querySelector('[data-testid=export-json]').href.split('/')[5]")
    assert listed(app) == [] and app.server.get(f"/api/conversations/{cid}").status_code == 200
    shoot(page, "temporary-chat", toggle_sidebar)
    page.get_by_test_id("new-chat-button").click()  # the page leaves it: deleted
    expect(page.get_by_test_id("temporary-item")).to_have_count(0)
    deadline = time.monotonic() + 10
    while app.server.get(f"/api/conversations/{cid}").status_code != 404:
        assert time.monotonic() < deadline, "the temporary chat was not deleted"
        time.sleep(0.05)
    send(page, "a kept question")
    assert listed(app) == ["a kept question"]


def test_a_temporary_chat_is_deleted_when_the_page_is_left(page: Page, app: App, ollama: FakeOllama) -> None:
    page.get_by_test_id("temporary-chat-button").click()
    send(page, "close me")
    cid = page.evaluate("() => document.querySelector('[data-testid=export-json]').href.split('/')[5]")
    page.goto("about:blank")  # the tab goes elsewhere (or closes): `pagehide`
    deadline = time.monotonic() + 10
    while app.server.get(f"/api/conversations/{cid}").status_code != 404:
        assert time.monotonic() < deadline, "the temporary chat outlived its tab"
        time.sleep(0.05)


@pytest.fixture
def titled_app(tmp_path: Path, ollama: FakeOllama) -> Iterator[App]:
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        titling = body["messages"][0].get("content") == TITLE_SYSTEM
        return {"text": "Lighthouse keepers"} if titling else {"text": "Lighthouses guide ships."}

    ollama.responder = reply
    a = App(tmp_path, ollama, AUTO_TITLE="true")
    yield a
    a.server.stop()


def test_the_models_title_replaces_the_first_line_after_the_first_answer(
    browser: Browser, titled_app: App, request: pytest.FixtureRequest
) -> None:
    with open_page(browser, titled_app.server.url, request.node.name) as page:
        send(page, "tell me about lighthouses please")
        expect(page.locator(".conversation-item .title").first).to_have_text("Lighthouse keepers", timeout=15000)
        summary = titled_app.server.get("/api/conversations?fields=all").json()["conversations"][0]
        assert summary["titleBy"] == "model"
        # a title the person gives stays theirs
        row(page, "Lighthouse keepers").hover()
        row(page, "Lighthouse keepers").get_by_test_id("rename-button").click()
        page.get_by_test_id("rename-input").fill("My lights")
        page.get_by_test_id("rename-input").press("Enter")
        send(page, "and more")
        expect(page.locator(".conversation-item .title").first).to_have_text("My lights")
