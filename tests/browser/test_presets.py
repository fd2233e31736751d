"""Saved settings on the page (issue 48 item 12), in Chromium against a real server and the
fake Ollama: instructions that add to the server's prompt unless the person replaces it,
"Use as my default" for new chats (kept on the server: after a reload too), and named
presets saved, chosen and deleted in the conversation's settings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import App, open_page, shoot
from tests.browser.test_organising import send
from tests.support.fake_ollama import FakeOllama

SERVER_PROMPT = "You are a test."  # config/system.md as tests.support.app writes it


@pytest.fixture
def models_app(tmp_path: Path, ollama: FakeOllama) -> Iterator[App]:
    ollama.models = ("qwen3:latest", "llama3.2:latest")
    a = App(tmp_path, ollama, TOOLS_BACKEND="none")
    yield a
    a.server.stop()


@pytest.fixture
def page(browser: Browser, models_app: App, request: pytest.FixtureRequest) -> Iterator[Page]:
    with open_page(browser, models_app.server.url, request.node.name) as pg:
        yield pg


def system_sent(ollama: FakeOllama) -> tuple[str, str]:
    last = ollama.requests[-1]
    return last["model"], last["messages"][0]["content"]


def settings(page: Page) -> None:
    if page.get_by_test_id("settings-panel").is_hidden():
        page.get_by_test_id("settings-button").click()


def test_instructions_add_to_the_servers_prompt_unless_replaced(page: Page, ollama: FakeOllama) -> None:
    send(page, "first")
    settings(page)
    page.get_by_test_id("system-input").fill("Answer like a pirate.")
    page.get_by_test_id("system-save").click()
    expect(page.get_by_test_id("settings-panel")).to_contain_text("Saved")
    send(page, "second")
    assert system_sent(ollama) == ("qwen3", f"{SERVER_PROMPT}\n\nAnswer like a pirate.")
    page.get_by_test_id("system-replace").check()
    page.get_by_test_id("system-save").click()
    expect(page.get_by_test_id("settings-panel")).to_contain_text("Saved")
    send(page, "third")
    assert system_sent(ollama) == ("qwen3", "Answer like a pirate.")
    page.reload()
    settings(page)
    expect(page.get_by_test_id("system-replace")).to_be_checked()


def test_use_as_my_default_starts_every_new_chat_with_these_settings(page: Page, ollama: FakeOllama, models_app: App) -> None:
    page.get_by_test_id("model-picker").select_option("llama3.2:latest")
    settings(page)
    page.get_by_test_id("system-input").fill("Be brief.")
    page.get_by_test_id("use-as-default").click()
    expect(page.get_by_test_id("settings-panel")).to_contain_text("Your new chats start with these settings")
    defaults = models_app.server.get("/api/presets").json()["defaults"]
    assert (defaults["model"], defaults["system"], defaults["systemMode"]) == ("llama3.2:latest", "Be brief.", "add")
    page.reload()  # kept on the server, for this user
    expect(page.get_by_test_id("empty-model-picker")).to_have_value("llama3.2:latest")
    send(page, "hello")
    assert system_sent(ollama) == ("llama3.2:latest", f"{SERVER_PROMPT}\n\nBe brief.")
    expect(page.get_by_test_id("model-picker")).to_have_value("llama3.2:latest")
    page.get_by_test_id("new-chat-button").click()
    expect(page.get_by_test_id("empty-model-picker")).to_have_value("llama3.2:latest")
    shoot(page, "presets-default")


def test_a_named_preset_is_saved_chosen_for_a_new_chat_and_deleted(page: Page, ollama: FakeOllama, models_app: App) -> None:
    settings(page)
    page.get_by_test_id("model-picker").select_option("llama3.2:latest")
    page.get_by_test_id("system-input").fill("Talk like a pirate.")
    page.get_by_test_id("system-replace").check()
    page.get_by_test_id("system-save").click()
    page.get_by_test_id("preset-name").fill("Pirate")
    page.get_by_test_id("preset-save").click()
    expect(page.get_by_test_id("preset-note")).to_have_text('Saved as "Pirate"')
    saved = models_app.server.get("/api/presets").json()["presets"]
    assert [(p["name"], p["model"], p["system"], p["systemMode"]) for p in saved] == [
        ("Pirate", "llama3.2:latest", "Talk like a pirate.", "replace")
    ]
    page.reload()  # a new chat with nothing chosen: the server's defaults
    expect(page.get_by_test_id("empty-model-picker")).to_have_value("")
    settings(page)
    expect(page.get_by_test_id("system-input")).to_have_value("")
    page.get_by_test_id("preset-picker").select_option("Pirate")
    expect(page.get_by_test_id("model-picker")).to_have_value("llama3.2:latest")
    expect(page.get_by_test_id("system-input")).to_have_value("Talk like a pirate.")
    expect(page.get_by_test_id("system-replace")).to_be_checked()
    shoot(page, "presets-chosen")
    send(page, "ahoy")
    assert system_sent(ollama) == ("llama3.2:latest", "Talk like a pirate.")
    # chosen on an open conversation: from its next turn on
    page.get_by_test_id("new-chat-button").click()
    send(page, "plain")
    assert system_sent(ollama) == ("qwen3", SERVER_PROMPT)
    settings(page)
    page.get_by_test_id("preset-picker").select_option("Pirate")
    expect(page.get_by_test_id("model-picker")).to_have_value("llama3.2:latest")
    send(page, "now a pirate")
    assert system_sent(ollama) == ("llama3.2:latest", "Talk like a pirate.")
    page.get_by_test_id("preset-picker").select_option("Pirate")
    page.get_by_test_id("preset-delete").click()
    expect(page.get_by_test_id("preset-note")).to_have_text('Deleted "Pirate"')
    expect(page.get_by_test_id("preset-picker").locator("option")).to_have_text(["No presets yet"])
    assert models_app.server.get("/api/presets").json()["presets"] == []
