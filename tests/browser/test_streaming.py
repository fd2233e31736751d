"""Streaming in a long chat (issue 33 item 12): a token redraws only the streaming bubble,
and re-reading the conversation after the run keeps every message already drawn; the
timing at 500 messages is bench/page_stream.py's."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.conftest import drawn
from tests.support.fake_ollama import FakeOllama

WATCH = """() => {
  window.__removed = [];
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.removedNodes) if (n.dataset && n.dataset.index !== undefined) window.__removed.push(n.dataset.index);
  }).observe(document.getElementById("messages"), { childList: true });
}"""


def test_a_token_redraws_only_the_streaming_bubble(tab: Page, shared_ollama: FakeOllama) -> None:
    shared_ollama.add(*({"text": f"Answer {i} with **bold** and `code`."} for i in range(4)))
    for i in range(3):
        tab.get_by_test_id("message-input").fill(f"stream question {i}")
        tab.get_by_test_id("message-input").press("Enter")
        expect(tab.get_by_test_id("assistant-message").last).to_contain_text(f"Answer {i}", timeout=15000)
    # the last of them ends with a re-read of the conversation, which draws the list again: the
    # watch below starts once that is drawn (a fresh-clone CI saw it land after the watch began)
    with tab.expect_response(re.compile(r"/api/conversations/[0-9a-f-]{36}$"), timeout=15000):
        tab.get_by_test_id("message-input").fill("stream question 3")
        tab.get_by_test_id("message-input").press("Enter")
    expect(tab.get_by_test_id("assistant-message").last).to_contain_text("Answer 3", timeout=15000)
    drawn(tab)
    first = tab.locator('#messages [data-index="0"]')
    first.evaluate("n => { n.__mark = 'kept'; }")
    tab.evaluate(WATCH)
    shared_ollama.add({"text": " ".join(f"tok{i}" for i in range(40)), "token_delay": 0.02})
    tab.get_by_test_id("message-input").fill("stream question 4")
    tab.get_by_test_id("message-input").press("Enter")
    expect(tab.get_by_test_id("assistant-message").last).to_contain_text("tok39", timeout=15000)
    drawn(tab)  # the run is over and the page re-read it
    removed = tab.evaluate("window.__removed")
    # the seven messages before the last answer were never taken out (that one loses its regenerate icon)
    assert [i for i in removed if int(i) < 7] == [], removed
    assert first.evaluate("n => n.__mark") == "kept"  # the very same node, after the re-read too
