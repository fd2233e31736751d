"""Stop, failure and resume on the page (issue 33 item 18): a resumed answer continues
inside its bubble after a thin "continued" mark; the banner is worded by cause (the model
failed: Retry; you stopped: Resume); a failed answer's partial text is kept."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import App, open_page, shoot
from tests.support.fake_ollama import FakeOllama


def send(page: Page, text: str) -> None:
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("message-input").press("Enter")


def test_resume_after_stop_continues_inside_the_stopped_bubble(tab: Page, shared_ollama: FakeOllama) -> None:
    shared_ollama.add({"text": "slow " * 300, "token_delay": 0.05}, {"text": "and the rest.", "token_delay": 0.05})
    send(tab, "stop me then resume")
    bubble = tab.get_by_test_id("assistant-message")
    expect(bubble).to_contain_text("slow slow", timeout=15000)
    tab.get_by_test_id("stop-button").click()
    expect(tab.get_by_test_id("resume-banner")).to_contain_text("You stopped", timeout=10000)
    expect(tab.get_by_test_id("resume-button")).to_have_text("Resume")
    tab.get_by_test_id("resume-button").click()
    for _ in range(2):  # as it streams and ends, then as stored (after a reload)
        expect(bubble).to_contain_text("and the rest.", timeout=15000)
        expect(bubble).to_have_count(1)  # one bubble, not a second one
        expect(bubble.get_by_test_id("continued-mark")).to_have_count(1)
        expect(bubble.get_by_test_id("stopped-note")).to_have_count(0)
        tab.reload()
    shoot(tab, "resume-continued")


def test_a_model_failure_keeps_the_partial_answer_and_offers_retry(tab: Page, shared_ollama: FakeOllama) -> None:
    shared_ollama.add(
        {"text": "The first half of the answer", "token_delay": 0.02, "error": "the model crashed"},
        {"text": "and its second half."},
    )
    send(tab, "fail half way")
    banner = tab.get_by_test_id("resume-banner")
    expect(banner).to_contain_text("The model failed before it finished", timeout=15000)
    expect(tab.get_by_test_id("resume-button")).to_have_text("Retry")
    bubble = tab.get_by_test_id("assistant-message")
    expect(bubble).to_contain_text("The first half of the answer")
    expect(bubble.get_by_test_id("failed-note")).to_be_visible()
    shoot(tab, "failed-partial")
    tab.get_by_test_id("resume-button").click()
    expect(bubble).to_contain_text("and its second half.", timeout=15000)
    expect(bubble).to_have_count(1)
    expect(bubble.get_by_test_id("continued-mark")).to_have_count(1)
    expect(bubble.get_by_test_id("failed-note")).to_have_count(0)
    expect(banner).to_be_hidden()


def test_an_answer_cut_at_the_length_limit_says_so(browser: Browser, tmp_path: Path, ollama: FakeOllama) -> None:
    ollama.add({"text": "long " * 60, "token_delay": 0.01}, {"text": "and the end."})
    app = App(tmp_path, ollama, MODEL_MAX_TOKENS="20")
    try:
        with open_page(browser, app.server.url, "answer-cut") as tab:
            send(tab, "write a lot")
            first = tab.get_by_test_id("assistant-message").first
            for reloaded in (False, True):  # as it ends, then as stored
                if reloaded:
                    tab.reload()  # the page reopens the latest conversation; the checks below wait for it
                expect(first.get_by_test_id("cut-note")).to_have_text("Cut at the length limit", timeout=15000)
                expect(first.get_by_test_id("failed-note")).to_have_count(0)  # the model did not fail
                expect(first).to_contain_text("long long")
                if not reloaded:
                    shoot(tab, "answer-cut")
            send(tab, "go on")  # the conversation goes on from the kept text
            expect(tab.get_by_test_id("assistant-message").last).to_contain_text("and the end.", timeout=15000)
            expect(first.get_by_test_id("cut-note")).to_be_visible()  # history keeps the mark
    finally:
        app.server.stop()
