"""The page queues what is typed during an answer (issue 30): three messages typed while the
first answer streams are shown greyed under it, survive a reload and a kill -9 of the
server, and are answered in order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import App, drawn, open_page, shoot
from tests.support.fake_ollama import FakeOllama


def answers(body: dict[str, Any]) -> dict[str, Any]:
    """Each user message gets its own answer; the first one streams slowly."""
    last = [m for m in body.get("messages") or [] if m.get("role") == "user"][-1]["content"]
    if last == "count slowly":
        return {"text": "counting " * 60, "token_delay": 0.1}
    return {"text": f"answer to {last}"}


def type_three_during_the_answer(page: Page) -> None:
    box = page.get_by_test_id("message-input")
    box.fill("count slowly")
    box.press("Enter")
    expect(page.get_by_test_id("stop-button")).to_be_visible(timeout=15000)
    for text in ("one", "two", "three"):
        box.fill(text)
        box.press("Enter")
    queued = page.get_by_test_id("queued-message")
    expect(queued).to_have_count(3)
    expect(queued.first).to_contain_text("sends next")
    expect(box).to_have_value("")


def all_answered_in_order(page: Page) -> None:
    expect(page.get_by_test_id("queued-message")).to_have_count(0, timeout=60000)
    expect(page.get_by_text("answer to three")).to_be_visible(timeout=60000)
    drawn(page, timeout=60000)  # read once the last run's end has drawn the conversation as stored
    text = page.get_by_test_id("message-list").inner_text()
    positions = [text.index(s) for s in ("count slowly", "one", "answer to one", "two", "answer to two", "three",
                                         "answer to three")]
    assert positions == sorted(positions), text


def test_three_messages_typed_during_an_answer_are_answered_in_order_after_a_reload(
    browser: Browser, tmp_path: Path, ollama: FakeOllama
) -> None:
    ollama.responder = answers
    app = App(tmp_path, ollama)
    try:
        with open_page(browser, app.server.url, "queue-reload") as page:
            type_three_during_the_answer(page)
            shoot(page, "queue")
            page.reload()
            expect(page.get_by_test_id("queued-message")).to_have_count(3)
            all_answered_in_order(page)
    finally:
        app.server.stop()


def test_the_queue_survives_a_kill_of_the_server(browser: Browser, tmp_path: Path, ollama: FakeOllama) -> None:
    ollama.responder = answers
    app = App(tmp_path, ollama, AUTO_RESUME="true", RUN_LEASE_SECONDS="3")
    try:
        with open_page(browser, app.server.url, "queue-kill") as page:
            type_three_during_the_answer(page)
            app.restart(kill=True)
            all_answered_in_order(page)
    finally:
        app.server.stop()


def test_a_queued_message_can_be_edited_removed_or_sent_now(browser: Browser, tmp_path: Path, ollama: FakeOllama) -> None:
    ollama.responder = answers
    app = App(tmp_path, ollama)
    try:
        with open_page(browser, app.server.url, "queue-edit") as page:
            type_three_during_the_answer(page)
            queued = page.get_by_test_id("queued-message")
            page.once("dialog", lambda d: d.accept("deux"))
            queued.nth(1).get_by_test_id("queued-edit").click()
            expect(queued.nth(1)).to_contain_text("deux")
            queued.nth(2).get_by_test_id("queued-remove").click()
            expect(queued).to_have_count(2)
            queued.nth(1).get_by_test_id("queued-send-now").click()  # "deux" steers: first in line
            expect(queued.first).to_contain_text("deux")
            expect(queued.first).to_contain_text("steers the answer")
            expect(page.get_by_text("answer to one")).to_be_visible(timeout=60000)
            drawn(page)  # read once the last run's end has redrawn the conversation
            bubbles = page.get_by_test_id("assistant-message")
            expect(bubbles).to_contain_text(["counting", "answer to deux", "answer to one"])  # in this order
            expect(page.get_by_text("answer to three")).to_have_count(0)
    finally:
        app.server.stop()
