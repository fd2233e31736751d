"""Fork into a new conversation from any message (issue 33 item 19): the new conversation
holds the messages up to that one, goes on by itself, and the source is left as it was."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.conftest import App, drawn, shoot
from tests.support.fake_ollama import FakeOllama


def send(page: Page, text: str, reply: str) -> None:
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("message-input").press("Enter")
    expect(page.get_by_test_id("assistant-message").last).to_have_text(reply, timeout=15000)


def test_a_message_forks_into_a_new_conversation(tab: Page, shared_app: App, shared_ollama: FakeOllama) -> None:
    shared_ollama.add({"text": "Paris."}, {"text": "About two million."}, {"text": "Lyon is second."})
    send(tab, "capital of France? (fork)", "Paris.")
    send(tab, "and its population?", "About two million.")
    drawn(tab)  # the title read below is the one the end of the run drew
    source = tab.get_by_test_id("current-title").inner_text()
    first_answer = tab.get_by_test_id("assistant-message").first
    first_answer.hover()
    shoot(tab, "fork-action")
    first_answer.get_by_test_id("fork-message").click()
    expect(tab.get_by_test_id("current-title")).to_have_text(f"{source} (fork)")
    expect(tab.locator("#messages > .msg")).to_have_count(2)  # up to the answer forked from
    expect(tab.get_by_test_id("assistant-message")).to_have_text("Paris.")
    expect(tab.get_by_test_id("resume-banner")).to_be_hidden()
    send(tab, "and its second city?", "Lyon is second.")
    shoot(tab, "forked")
    forks = [c for c in shared_app.server.get("/api/conversations").json()["conversations"] if c["title"].startswith(source)]
    assert sorted(c["messageCount"] for c in forks) == [4, 4]  # the source kept its four, the fork has its own
    original = next(c for c in forks if c["title"] == source)
    texts = [m["content"] for m in shared_app.server.get(f"/api/conversations/{original['id']}").json()["messages"]]
    assert texts == ["capital of France? (fork)", "Paris.", "and its population?", "About two million."]
    bad = shared_app.server.post(f"/api/conversations/{original['id']}/fork", {"messageIndex": 10**30})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "BAD_REQUEST"
