"""The model picker, the system prompt of a conversation and the model's thinking on the
page (Chromium) against a real server and the fake Ollama: each survives a reload."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from tests.browser.conftest import App, open_page
from tests.support.fake_ollama import FakeOllama


@pytest.fixture
def models_app(tmp_path: Path, ollama: FakeOllama) -> Iterator[App]:
    ollama.models = ("qwen3:latest", "llama3.2:latest")
    ollama.capabilities = {"qwen3:latest": ["thinking"]}
    a = App(tmp_path, ollama, TOOLS_BACKEND="none")
    yield a
    a.server.stop()


@pytest.fixture
def page(browser: Browser, models_app: App, request: pytest.FixtureRequest) -> Iterator[Page]:
    with open_page(browser, models_app.server.url, request.node.name) as pg:
        yield pg


def send(page: Page, text: str) -> None:
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("send-button").click()


def test_pick_a_model_in_the_empty_state_and_see_it_on_the_answer_after_a_reload(page: Page, ollama: FakeOllama) -> None:
    empty = page.get_by_test_id("empty-model-picker")
    expect(empty).to_be_visible()
    expect(empty.locator("option")).to_have_text(["Default (qwen3)", "qwen3:latest", "llama3.2:latest"])
    empty.select_option("llama3.2:latest")
    expect(page.get_by_test_id("model-picker")).to_have_value("llama3.2:latest")
    ollama.add({"text": "Hola from llama"})
    send(page, "which model are you?")
    answer = page.get_by_test_id("assistant-message").last
    expect(answer).to_contain_text("Hola from llama")
    expect(answer.get_by_test_id("answer-model")).to_have_attribute("data-model", "llama3.2:latest")
    assert ollama.requests[-1]["model"] == "llama3.2:latest"
    # switched in the header: the next answer comes from the other model, the first keeps its name,
    # even when the message is sent before the server has the choice (its PATCH held here)
    held: list[Route] = []
    page.route("**/api/conversations/*", lambda r: held.append(r) if r.request.method == "PATCH" else r.continue_())
    page.get_by_test_id("model-picker").select_option("")
    while not held:
        page.wait_for_timeout(20)
    ollama.add({"text": "Hello from qwen"})
    send(page, "and now?")
    page.wait_for_timeout(300)  # the message waits for the choice
    held[0].continue_()
    page.unroute("**/api/conversations/*")
    expect(page.get_by_test_id("assistant-message").last).to_contain_text("Hello from qwen")
    assert ollama.requests[-1]["model"] == "qwen3"
    page.reload()
    labels = page.get_by_test_id("answer-model")
    expect(labels).to_have_count(2)
    assert labels.evaluate_all("ns => ns.map(n => n.dataset.model)") == ["llama3.2:latest", "qwen3"]
    expect(page.get_by_test_id("model-picker")).to_have_value("")


def test_set_a_system_prompt_in_the_conversations_settings(page: Page, ollama: FakeOllama) -> None:
    send(page, "first")
    expect(page.get_by_test_id("assistant-message")).to_have_count(1)
    page.get_by_test_id("settings-button").click()
    page.get_by_test_id("system-input").fill("Answer like a pirate.")
    page.get_by_test_id("system-save").click()
    expect(page.get_by_test_id("settings-panel")).to_contain_text("Saved")
    send(page, "second")
    expect(page.get_by_test_id("assistant-message")).to_have_count(2)
    # added after the server's prompt (config/system.md): its tool guidance stays
    assert ollama.requests[-1]["messages"][0] == {"role": "system", "content": "You are a test.\n\nAnswer like a pirate."}
    page.reload()
    page.get_by_test_id("settings-button").click()
    expect(page.get_by_test_id("system-input")).to_have_value("Answer like a pirate.")


def test_the_thinking_block_streams_collapses_and_survives_a_reload(page: Page, ollama: FakeOllama) -> None:
    thought = " ".join(f"step{i}" for i in range(40))
    ollama.add({"thinking": thought, "text": "The answer is 42.", "token_delay": 0.04})
    send(page, "think hard")
    label = page.get_by_test_id("thinking-label")
    expect(label).to_have_text("Thinking…")  # live while it thinks
    expect(page.get_by_test_id("assistant-message").last).to_contain_text("The answer is 42.")
    expect(label).to_have_text(re.compile(r"^Thought for \d+(\.\d)? s$"))
    block = page.get_by_test_id("thinking")
    expect(block).not_to_have_attribute("open", "")  # collapsed: the answer comes first
    expect(page.get_by_test_id("thinking-text")).not_to_be_visible()
    label.click()
    expect(page.get_by_test_id("thinking-text")).to_contain_text("step39")
    page.reload()
    expect(page.get_by_test_id("thinking-label")).to_have_text(re.compile(r"^Thought for \d+(\.\d)? s$"))
    page.get_by_test_id("thinking-label").click()
    expect(page.get_by_test_id("thinking-text")).to_contain_text("step0")


def test_a_thinking_answer_redraws_only_its_own_bubble_and_keeps_its_block_open(page: Page, ollama: FakeOllama) -> None:
    ollama.add({"text": "First answer."})
    send(page, "first")
    expect(page.get_by_test_id("assistant-message")).to_contain_text("First answer.")
    page.reload()  # the first exchange as the server has it: nothing left for a re-read to replace
    expect(page.get_by_test_id("assistant-message")).to_contain_text("First answer.")
    page.evaluate("""() => {
      window.__removed = [];
      new MutationObserver((records) => {
        for (const r of records) for (const n of r.removedNodes) if (n.dataset && n.dataset.index !== undefined) window.__removed.push(n.dataset.index);
      }).observe(document.getElementById("messages"), { childList: true });
    }""")
    ollama.add({"thinking": " ".join(f"step{i}" for i in range(60)), "text": "Done thinking.", "token_delay": 0.05})
    send(page, "think")
    label = page.get_by_test_id("thinking-label")
    expect(label).to_have_text("Thinking…")
    label.click()  # opened while it streams: the bubble is redrawn per frame, the block stays open
    expect(page.get_by_test_id("thinking-text")).to_contain_text("step30", timeout=15000)
    expect(page.get_by_test_id("thinking")).to_have_attribute("open", "")
    answer = page.get_by_test_id("assistant-message").last
    expect(answer).to_contain_text("Done thinking.")
    expect(answer.get_by_test_id("answer-model")).to_have_attribute("data-model", "qwen3")
    expect(page.get_by_test_id("stop-button")).to_be_hidden()
    # a re-read of the conversation (as at the run's end) brings its messages as new objects: the
    # block stays as the person left it
    page.get_by_test_id("open-conversation").first.click()
    expect(page.get_by_test_id("assistant-message").last).to_contain_text("Done thinking.")
    expect(page.get_by_test_id("thinking")).to_have_attribute("open", "")
    removed = page.evaluate("window.__removed")
    # the first question was never taken out (the first answer is redrawn once: it loses its regenerate icon)
    assert [i for i in removed if int(i) < 1] == [] and removed.count("1") <= 1, removed
