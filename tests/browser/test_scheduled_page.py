"""The page's "Scheduled" list (issue 46 item 4), in Chromium against a real server and the
fake Ollama: a schedule made in the page fires into the open conversation (its message,
marked as a schedule's, and the model's answer appear), shows its next firing and last
outcome, pauses (and no firing follows), resumes and is deleted."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.browser.conftest import App, drawn, shoot
from tests.browser.test_organising import send
from tests.integration.test_schedules import wait_for
from tests.support.fake_ollama import FakeOllama


def firings(app: App, sid: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = app.server.get(f"/api/schedules/{sid}/runs").json()["firings"]
    return found


def test_a_schedule_made_in_the_page_fires_into_the_conversation_and_stops_when_paused(
    page: Page, app: App, ollama: FakeOllama
) -> None:
    send(page, "a conversation to schedule into")
    ollama.default = {"text": "Pong from the model"}
    page.get_by_test_id("scheduled-view").click()
    expect(page.get_by_test_id("schedule-empty")).to_be_visible()
    page.get_by_test_id("schedule-cron").fill("*/2 * * * * *")  # every two seconds (the six-field form)
    page.get_by_test_id("schedule-tz").fill("UTC")
    page.get_by_test_id("schedule-target").select_option("current")
    page.get_by_test_id("schedule-message").fill("Scheduled ping")
    page.get_by_test_id("schedule-add").click()
    item = page.get_by_test_id("schedule-item")
    expect(item).to_have_count(1)
    expect(item.get_by_test_id("schedule-text")).to_have_text("Scheduled ping")
    expect(item.get_by_test_id("schedule-next")).to_contain_text("Next:")
    # it fires into the open conversation: the message, marked as the schedule's, then the model's answer
    marked = page.get_by_test_id("user-message").filter(has=page.get_by_test_id("scheduled-mark"))
    expect(marked.first).to_contain_text("Scheduled ping", timeout=20000)
    expect(marked.first.get_by_test_id("scheduled-mark")).to_contain_text("Scheduled ·")
    expect(page.get_by_test_id("assistant-message").last).to_have_text("Pong from the model", timeout=15000)
    expect(page.get_by_test_id("user-message").first).not_to_contain_text("Scheduled ·")  # the person's own is not marked
    expect(item.get_by_test_id("schedule-last")).to_contain_text("Last: done", timeout=15000)
    shoot(page, "scheduled")
    # paused: the list says so, and no firing comes after (while another schedule fires three times)
    item.get_by_test_id("schedule-pause").click()
    expect(item.get_by_test_id("schedule-next")).to_have_text("Paused")
    expect(item.get_by_test_id("schedule-pause")).to_have_text("Resume")
    sid = item.get_attribute("data-id")
    assert sid
    fired = firings(app, sid)
    assert fired and all(f["conversationId"] == fired[0]["conversationId"] for f in fired)
    control = app.server.post("/api/schedules", {"cron": "* * * * * *", "message": "control"}).json()["schedule"]
    wait_for(lambda: len(firings(app, control["id"])) >= 3, timeout=30)
    app.server.patch(f"/api/schedules/{control['id']}", {"enabled": False})
    assert firings(app, sid) == fired
    drawn(page)
    texts = page.get_by_test_id("user-message").filter(has_text="Scheduled ping")
    expect(texts).to_have_count(len(fired), timeout=15000)  # each firing once, queued ones too
    # resumed, then deleted
    item = page.get_by_test_id("schedule-item").filter(has_text="Scheduled ping")
    item.get_by_test_id("schedule-pause").click()
    expect(item.get_by_test_id("schedule-next")).to_contain_text("Next:")
    item.get_by_test_id("schedule-delete").click()
    expect(page.get_by_test_id("schedule-item").filter(has_text="Scheduled ping")).to_have_count(0)
    assert [s["message"] for s in app.server.get("/api/schedules").json()["schedules"]] == ["control"]
