"""Two users on one server: each logs in to the page with their own token and sees only
their own conversations; a disabled user's page falls back to the login."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import SHOTS, App, open_page
from tests.support.app import SOPHOS, process_env
from tests.support.fake_ollama import FakeOllama


@pytest.fixture
def team(tmp_path: Path, ollama: FakeOllama) -> Iterator[App]:
    a = App(tmp_path, ollama)
    yield a
    a.server.stop()


def add_user(app: App, *args: str) -> str:
    done = subprocess.run([SOPHOS, "users", *args], env=process_env(app.env), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found = re.search(r"token t_[0-9a-f]{16}: (sophos_\S+)", done.stdout)
    return found[1] if found else ""


def log_in(page: Page, token: str) -> None:
    login = page.get_by_test_id("login")
    expect(login).to_be_visible()
    page.get_by_test_id("token-input").fill(token)
    page.keyboard.press("Enter")
    expect(login).to_be_hidden()


def test_each_user_sees_their_own_conversations_and_a_disable_logs_out(browser: Browser, team: App, ollama: FakeOllama) -> None:
    ann, bob = add_user(team, "add", "ann"), add_user(team, "add", "bob")
    ollama.add({"text": "noted for ann"}, {"text": "noted for bob"})
    with open_page(browser, team.server.url, "ann") as page:
        log_in(page, ann)
        page.get_by_test_id("message-input").fill("ann's secret plans")
        page.get_by_test_id("message-input").press("Enter")
        expect(page.get_by_test_id("assistant-message").last).to_have_text("noted for ann", timeout=15000)
        expect(page.get_by_test_id("message-input")).to_be_focused(timeout=15000)
        expect(page.get_by_test_id("conversation-list")).to_contain_text("ann's secret plans")
    with open_page(browser, team.server.url, "bob") as page:
        log_in(page, bob)
        expect(page.get_by_test_id("readiness")).to_have_text("Model ready")
        expect(page.get_by_test_id("conversation-list")).not_to_contain_text("ann's secret plans")
        page.get_by_test_id("message-input").fill("bob's own question")
        page.get_by_test_id("message-input").press("Enter")
        expect(page.get_by_test_id("assistant-message").last).to_have_text("noted for bob", timeout=15000)
        expect(page.get_by_test_id("message-input")).to_be_focused(timeout=15000)
        expect(page.get_by_test_id("conversation-list")).to_contain_text("bob's own question")
        expect(page.get_by_test_id("conversation-list")).not_to_contain_text("ann's secret plans")
        add_user(team, "disable", "bob")
        page.reload()
        expect(page.get_by_test_id("login")).to_be_visible()


def inside(page: Page, test_id: str) -> bool:
    box = page.get_by_test_id(test_id).bounding_box()
    size = page.viewport_size
    assert box is not None and size is not None
    return box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= size["width"]


def test_the_header_names_who_is_logged_in_with_one_menu_to_log_out(browser: Browser, team: App) -> None:
    ann = add_user(team, "add", "ann")
    with open_page(browser, team.server.url, "account-menu") as page:
        log_in(page, ann)
        account = page.get_by_test_id("account-button")
        expect(page.get_by_test_id("account-name")).to_have_text("ann")
        expect(account).to_have_attribute("title", "Logged in as ann (user)")
        expect(account).to_have_attribute("aria-expanded", "false")
        expect(page.get_by_test_id("logout-button")).to_be_hidden()  # in the menu, not beside it
        account.click()
        menu = page.get_by_test_id("account-menu")
        expect(menu).to_be_visible()
        expect(menu.get_by_role("menuitem")).to_have_text(["Log out", "Log out everywhere"])
        expect(page.get_by_test_id("logout-button")).to_be_focused()
        assert inside(page, "account-menu")
        page.keyboard.press("ArrowDown")
        expect(page.get_by_test_id("logout-everywhere-button")).to_be_focused()
        page.set_viewport_size({"width": 375, "height": 740})  # open while the header wraps: placed again
        assert inside(page, "account-menu") and inside(page, "account-button")
        page.keyboard.press("Escape")
        expect(menu).to_be_hidden()
        expect(account).to_be_focused()
        account.click()
        assert inside(page, "account-menu")
        page.screenshot(path=str(SHOTS / "account-menu-375.png"))
        page.get_by_test_id("logout-button").click()
        expect(page.get_by_test_id("login")).to_be_visible()
        expect(page.get_by_test_id("account")).to_be_hidden()
