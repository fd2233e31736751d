"""The page when things go wrong: no model server on the first message, and a server that
goes away mid-answer and comes back."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import App, open_page, shoot
from tests.support.fake_ollama import FakeOllama
from tests.support.server import LiveServer


def test_a_failed_first_message_shows_the_fix_in_the_banner(browser: Browser, tmp_path: Path) -> None:
    app = App(tmp_path, None)  # nothing listens where the model should be
    try:
        with open_page(browser, app.server.url, "first-message-fix") as page:
            page.get_by_test_id("message-input").fill("hello?")
            page.get_by_test_id("message-input").press("Enter")
            banner = page.get_by_test_id("error-banner")
            expect(banner).to_contain_text("Error: MODEL_UNREACHABLE", timeout=15000)
            expect(banner).to_contain_text("ollama serve")
            expect(banner).to_contain_text("make demo")
            expect(banner).to_contain_text("OLLAMA_HOST")
            expect(page.locator(".conversation-item .badge")).to_have_text("failed")
            shoot(page, "first-message-fix")
    finally:
        app.server.stop()


def test_the_page_says_reconnecting_and_recovers_by_itself_when_the_server_returns(
    page: Page, app: App, ollama: FakeOllama
) -> None:
    ollama.add({"text": "steady " * 300, "token_delay": 0.05})
    page.get_by_test_id("message-input").fill("survive a restart")
    page.get_by_test_id("message-input").press("Enter")
    expect(page.get_by_test_id("assistant-message").last).to_contain_text("steady steady", timeout=15000)
    port = app.server.port
    app.server.kill()
    connection = page.get_by_test_id("connection")
    expect(connection).to_have_text("Reconnecting…", timeout=10000)
    shoot(page, "reconnecting")
    app.server = LiveServer(app.env, app.tmp, port).start()
    expect(connection).to_be_hidden(timeout=15000)  # no reload: the page found the server again
    expect(page.get_by_test_id("resume-banner")).to_contain_text("stopped before it finished")
    expect(page.locator(".conversation-item .badge")).to_have_text("interrupted")
    page.get_by_test_id("resume-button").click()
    expect(page.get_by_test_id("assistant-message").last).to_have_text("Done.", timeout=15000)
    shoot(page, "reconnected")
