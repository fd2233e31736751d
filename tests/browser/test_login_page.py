"""With API_TOKEN the page asks for the token once, then works through its session cookie
(EventSource included), and logs out."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
        name = f"sophos_session_{guarded.server.port}"
        assert "sophos_session" not in page.evaluate("document.cookie")  # HttpOnly
        cookie = next(c for c in page.context.cookies() if c["name"] == name)
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and TOKEN not in cookie["value"]

        page.get_by_test_id("message-input").fill("hello behind a token")
        page.get_by_test_id("message-input").press("Enter")
        bubble = page.get_by_test_id("assistant-message").last
        expect(bubble).to_contain_text("tok3", timeout=15000)  # streamed through the cookie
        expect(page.get_by_test_id("stop-button")).to_be_visible()
        expect(bubble).to_have_text(" ".join(f"tok{i}" for i in range(30)), timeout=15000)
        shoot(page, "logged-in")

        expect(page.get_by_test_id("account-name")).to_have_text("admin")  # API_TOKEN: the bootstrap admin
        page.get_by_test_id("account-button").click()  # log out is in its menu
        page.get_by_test_id("logout-button").click()
        expect(login).to_be_visible()
        expect(page.get_by_test_id("user-message")).to_have_count(0)
        assert not [c for c in page.context.cookies() if c["name"] == name]
        # the session ended on the server: a copy of the cookie made before log-out is refused
        copy = {"Cookie": f"{name}={cookie['value']}"}
        assert guarded.server.get("/api/conversations", headers=copy).status_code == 401
        page.reload()
        expect(login).to_be_visible()
        assert page.request.get(f"{guarded.server.url}/api/conversations").status == 401
        shoot(page, "logged-out")


def test_log_out_everywhere_ends_the_other_browsers_sessions_too(browser: Browser, guarded: App) -> None:
    def logged_in(name: str) -> Any:
        page = stack.enter_context(open_page(browser, guarded.server.url, name))
        page.get_by_test_id("token-input").fill(TOKEN)
        page.keyboard.press("Enter")
        expect(page.get_by_test_id("login")).to_be_hidden()
        return page

    with contextlib.ExitStack() as stack:
        laptop, phone = logged_in("everywhere-laptop"), logged_in("everywhere-phone")
        phone.get_by_test_id("account-button").click()
        everywhere = phone.get_by_test_id("logout-everywhere-button")
        expect(everywhere).to_be_visible()
        expect(everywhere).to_have_text("Log out everywhere")
        shoot(phone, "logout-everywhere")
        everywhere.click()
        expect(phone.get_by_test_id("login")).to_be_visible()
        expect(phone.locator("#login-error")).to_have_text("Every browser was logged out.")
        # the other browser still holds its cookie, but the server ended its session
        assert laptop.request.get(f"{guarded.server.url}/api/conversations").status == 401
        laptop.reload()
        expect(laptop.get_by_test_id("login")).to_be_visible()
