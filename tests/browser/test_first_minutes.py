"""The first five minutes (issue 33, items 1 and 2): `make demo` on its own database opening
on a new chat; with no model, the header says the fix, Send is off with the reason, and the
empty chat shows the status and example prompts; an error banner never ends in "null"."""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import App, open_page, shoot, toggle_sidebar
from tests.support.app import ROOT, SOPHOS, process_env
from tests.support.fake_ollama import FakeOllama
from tests.support.server import free_port


def demo_command() -> list[str]:
    """The command `make demo` runs, read from the Makefile (so the test follows it)."""
    lines = (ROOT / "Makefile").read_text().split("\n")
    recipe = lines[lines.index(next(line for line in lines if line.startswith("demo:"))) + 1 :]
    command = next(line.strip() for line in recipe if "sophos" in line and not line.strip().startswith("@"))
    return [SOPHOS if word == "$(VENV)/bin/sophos" else word for word in shlex.split(command)]


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = process_env({"PORT": str(port), "HOST": "127.0.0.1", "CONFIG_DIR": str(ROOT / "config")})
    for name in ("DATABASE_PATH", "DATABASE_URL", "STORAGE_BACKEND"):
        env.pop(name, None)
    (tmp_path / "data" / "db").mkdir(parents=True)
    with (tmp_path / "demo.log").open("wb") as log:
        proc = subprocess.Popen(demo_command(), cwd=tmp_path, env=env, stdout=log, stderr=log)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                assert proc.poll() is None, (tmp_path / "demo.log").read_text()
                assert time.monotonic() < deadline, "the demo did not start"
                try:
                    if httpx.get(f"{url}/api/readyz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            yield url
        finally:
            proc.terminate()
            proc.wait(30)


def test_make_demo_keeps_its_own_database_and_opens_on_a_new_chat(browser: Browser, demo: str, tmp_path: Path) -> None:
    with open_page(browser, demo, "demo-first-screen") as page:
        expect(page.get_by_test_id("empty-state")).to_be_visible()
        expect(page.get_by_test_id("current-title")).to_have_text("New conversation")
        expect(page.get_by_test_id("readiness")).to_have_text("Model ready")
        examples = page.get_by_test_id("example-prompt")
        expect(examples).to_have_count(3)
        expect(examples.nth(2)).to_contain_text("What time is it")  # the demo's clock tool
        examples.nth(2).click()
        expect(page.get_by_test_id("message-input")).to_have_value(re.compile("What time is it"))
        page.get_by_test_id("message-input").press("Enter")
        expect(page.get_by_test_id("assistant-message").last).to_contain_text("The tool demo__clock said", timeout=15000)
        shoot(page, "demo-first-chat")
    assert (tmp_path / "data" / "demo" / "sophos.db").is_file()
    assert not (tmp_path / "data" / "db" / "sophos.db").exists()  # `make run`'s database is left alone


def test_with_no_model_the_page_says_the_fix_and_keeps_send_off(browser: Browser, tmp_path: Path) -> None:
    app = App(tmp_path, None)  # nothing listens where the model should be
    try:
        with open_page(browser, app.server.url, "no-model") as page:
            expect(page.get_by_test_id("readiness")).to_have_text("Failed to connect to Ollama")
            expect(page.get_by_test_id("readiness-fix")).to_contain_text("ollama serve")
            empty = page.get_by_test_id("empty-state")
            expect(empty.get_by_test_id("empty-status")).to_contain_text("Failed to connect to Ollama")
            expect(empty.get_by_test_id("empty-status")).to_contain_text("ollama serve")
            expect(page.get_by_test_id("example-prompt")).to_have_count(3)
            page.get_by_test_id("example-prompt").first.click()
            expect(page.get_by_test_id("send-button")).to_be_disabled()
            expect(page.get_by_test_id("send-reason")).to_contain_text("Failed to connect to Ollama")
            page.get_by_test_id("message-input").press("Enter")
            page.wait_for_timeout(500)
            assert app.server.get("/api/conversations").json()["conversations"] == []  # no failed conversation left
            shoot(page, "no-model", toggle_sidebar)
    finally:
        app.server.stop()


def test_an_empty_chat_shows_the_status_and_three_examples(tab: Page) -> None:
    empty = tab.get_by_test_id("empty-state")
    expect(empty).to_be_visible()
    expect(empty.get_by_test_id("empty-status")).to_contain_text("ready")
    expect(tab.get_by_test_id("example-prompt")).to_have_count(3)
    expect(tab.get_by_test_id("readiness-fix")).to_be_hidden()
    expect(tab.get_by_test_id("send-reason")).to_be_hidden()
    shoot(tab, "empty-state")


def test_an_error_banner_never_ends_in_null(tab: Page, shared_ollama: FakeOllama) -> None:
    shared_ollama.add({"status": 404})
    tab.get_by_test_id("message-input").fill("is the model there?")
    tab.get_by_test_id("message-input").press("Enter")
    banner = tab.get_by_test_id("composer-error")
    expect(banner.get_by_test_id("error-code")).to_have_text("MODEL_UNAVAILABLE", timeout=15000)
    assert "null" not in banner.inner_text()
    shoot(tab, "error-banner")
