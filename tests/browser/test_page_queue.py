"""The page queues what is typed during an answer (issue 30): three messages typed while the
first answer streams are shown greyed under it, survive a reload and a kill -9 of the
server, and are answered in order."""

from __future__ import annotations

import time
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
    positions = [
        text.index(s) for s in ("count slowly", "one", "answer to one", "two", "answer to two", "three", "answer to three")
    ]
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


def test_a_queued_message_is_edited_in_place_removed_or_sent_now_which_cuts_the_answer_at_once(
    browser: Browser, tmp_path: Path, ollama: FakeOllama
) -> None:
    """Edit in place (no prompt()), remove, and "Send now": the answer being written stops at
    once with its text kept, and the model has the new message within 2.5 s of the click."""
    asked: dict[str, float] = {}

    def timed(body: dict[str, Any]) -> dict[str, Any]:
        last = [m for m in body.get("messages") or [] if m.get("role") == "user"][-1]["content"]
        asked.setdefault(last, time.monotonic())
        return answers(body)

    ollama.responder = timed
    app = App(tmp_path, ollama)
    try:
        with open_page(browser, app.server.url, "queue-edit") as page:
            dialogs: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            type_three_during_the_answer(page)
            expect(page.get_by_test_id("detach-button")).to_have_count(0)  # nothing to leave the answer running unseen
            queued = page.get_by_test_id("queued-message")
            queued.nth(1).get_by_test_id("queued-edit").click()
            editor = queued.nth(1).get_by_test_id("queued-edit-input")
            expect(editor).to_be_focused()
            expect(editor).to_have_value("two")
            editor.press("Escape")  # cancels
            expect(queued.nth(1).get_by_test_id("queued-edit-input")).to_have_count(0)
            expect(queued.nth(1)).to_contain_text("two")
            queued.nth(1).get_by_test_id("queued-edit").click()
            editor.fill("deux")
            editor.press("Enter")  # saves, on the server
            expect(queued.nth(1)).to_contain_text("deux")
            expect(queued.nth(1).get_by_test_id("queued-edit-input")).to_have_count(0)
            assert dialogs == []
            queued.nth(2).get_by_test_id("queued-remove").click()
            expect(queued).to_have_count(2)
            shoot(page, "queue-edited")
            clicked = time.monotonic()
            queued.nth(1).get_by_test_id("queued-send-now").click()  # "deux" steers: the answer stops now
            expect(page.get_by_text("answer to deux")).to_be_visible(timeout=15000)
            assert asked["deux"] - clicked < 2.5, asked["deux"] - clicked
            expect(page.get_by_text("answer to one")).to_be_visible(timeout=60000)
            drawn(page)  # read once the last run's end has redrawn the conversation
            bubbles = page.get_by_test_id("assistant-message")
            expect(bubbles).to_contain_text(["counting", "answer to deux", "answer to one"])  # in this order
            cut = bubbles.first.inner_text()
            assert 0 < cut.count("counting") < 60, cut  # what it had written is kept, the rest never came
            expect(bubbles.first.get_by_test_id("stopped-note")).to_have_count(0)  # steered, not stopped
            expect(page.get_by_text("answer to three")).to_have_count(0)
    finally:
        app.server.stop()
