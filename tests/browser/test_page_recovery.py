"""The page with no model server: the first message fails and the banner names the fix."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, expect

from tests.browser.conftest import App, open_page, shoot


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
