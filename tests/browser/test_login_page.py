"""With API_TOKEN the page asks for the token once, then works through its session cookie
(EventSource included), and logs out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import App, open_page, shoot
from tests.support.fake_ollama import FakeOllama

TOKEN = "page-t0ken-é"


@pytest.fixture
def guarded(tmp_path: Path, ollama: FakeOllama) -> Iterator[App]:
    a = App(tmp_path, ollama, API_TOKEN=TOKEN)
    yield a
    a.server.stop()


def test_the_page_logs_in_with_the_token_streams_an_answer_and_logs_out(
    browser: Browser, guarded: App, ollama: FakeOllama
) -> None:
    ollama.add({"text": " ".join(f"tok{i}" for i in range(30)), "token_delay": 0.05})
    with open_page(browser, guarded.server.url, "login") as page:
        login = page.get_by_test_id("login")
        expect(login).to_be_visible()
        expect(page.get_by_test_id("token-input")).to_be_focused()
        shoot(page, "login")
        page.get_by_test_id("token-input").fill("wrong")
        page.get_by_test_id("login-button").click()
        expect(page.locator("#login-error")).to_have_text("That token is not the server's API_TOKEN")
        page.get_by_test_id("token-input").fill(TOKEN)
        page.keyboard.press("Enter")
        expect(login).to_be_hidden()
        expect(page.get_by_test_id("readiness")).to_have_text("Model ready")
        assert "sophos_session" not in page.evaluate("document.cookie")  # HttpOnly
        cookie = next(c for c in page.context.cookies() if c["name"] == "sophos_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and TOKEN not in cookie["value"]

        page.get_by_test_id("message-input").fill("hello behind a token")
        page.get_by_test_id("message-input").press("Enter")
        bubble = page.get_by_test_id("assistant-message").last
        expect(bubble).to_contain_text("tok3", timeout=15000)  # streamed through the cookie
        expect(page.get_by_test_id("stop-button")).to_be_visible()
        expect(bubble).to_have_text(" ".join(f"tok{i}" for i in range(30)), timeout=15000)
        shoot(page, "logged-in")

        page.get_by_test_id("logout-button").click()
        expect(login).to_be_visible()
        expect(page.get_by_test_id("user-message")).to_have_count(0)
        assert not [c for c in page.context.cookies() if c["name"] == "sophos_session"]
        page.reload()
        expect(login).to_be_visible()
        assert page.request.get(f"{guarded.server.url}/api/conversations").status == 401
        shoot(page, "logged-out")
