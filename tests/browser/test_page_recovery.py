"""The page when the model server goes away after the page found it ready: the message
fails, the note beside the composer names the fix, and Send is then off with the reason until it is back."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, expect

from tests.browser.conftest import App, open_page, shoot


def test_a_model_gone_after_loading_shows_the_fix_in_the_banner(browser: Browser, tmp_path: Path) -> None:
    app = App(tmp_path, None)  # nothing listens where the model should be
    try:
        with open_page(browser, app.server.url, "first-message-fix") as page:
            # the model was there when the page asked: readyz answers as it did then
            page.route("**/api/readyz", lambda route: route.fulfill(json={"status": "ok", "tools": []}))
            page.reload()
            expect(page.get_by_test_id("readiness")).to_have_text("Model ready")
            page.unroute("**/api/readyz")
            page.get_by_test_id("message-input").fill("hello?")
            page.get_by_test_id("message-input").press("Enter")
            banner = page.get_by_test_id("composer-error")  # beside the box the message was sent from
            expect(banner.get_by_test_id("error-code")).to_have_text("MODEL_UNREACHABLE", timeout=15000)
            expect(banner.get_by_test_id("error-lead")).to_have_text("The model server did not answer.")
            expect(banner).to_contain_text("ollama serve")
            expect(banner).to_contain_text("OLLAMA_HOST")
            assert "null" not in banner.inner_text()
            expect(page.locator(".conversation-item .badge")).to_have_text("failed")
            expect(page.get_by_test_id("resume-banner")).to_contain_text("The model failed before it answered")
            expect(page.get_by_test_id("resume-button")).to_have_text("Retry")
            expect(page.get_by_test_id("send-reason")).to_contain_text("Failed to connect", timeout=20000)
            shoot(page, "first-message-fix")
    finally:
        app.server.stop()
