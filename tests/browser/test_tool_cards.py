"""Tool calls you can read afterwards (issue 33 items 8 and 9): one card per call in the
answer that made it, with the arguments that ran ("edited from" the model's), a status chip,
the duration and a two-line result preview that unfolds; no regenerate while calls wait;
the "Allowed tools" panel lists and revokes the always-allow rules. Against a real server
(TOOL_APPROVAL=unsafe) and the ledger MCP server."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import App, drawn, open_page, shoot, toggle_sidebar
from tests.support.fake_ollama import FakeOllama, fake_ollama

LINES = "\n".join(f"line {i} of a long result" for i in range(1, 9))


def answer(body: dict[str, Any]) -> dict[str, Any]:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return {"text": f"done: {last['content'][:60]}"}
    if "lines" in last["content"]:
        return {"tool_calls": [("ledger__append", {"label": LINES})]}
    amounts = re.findall(r"\d+", last["content"])
    return {"tool_calls": [("ledger__charge", {"amount": int(a)}) for a in amounts]} if amounts else {"text": "hello"}


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOllama]:
    with fake_ollama() as fake:
        fake.responder = answer
        yield fake


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory, model: FakeOllama) -> Iterator[App]:
    a = App(tmp_path_factory.mktemp("cards"), model, TOOL_APPROVAL="unsafe")
    yield a
    a.server.stop()


@pytest.fixture
def tab(browser: Browser, gated: App, request: pytest.FixtureRequest) -> Iterator[Page]:
    with open_page(browser, gated.server.url, request.node.name) as pg:
        yield pg


def ask(page: Page, text: str) -> None:
    page.get_by_test_id("new-chat-button").click()
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("message-input").press("Enter")
    expect(page.get_by_test_id("approval-card")).to_have_count(1, timeout=15000)


def done(page: Page) -> None:
    expect(page.get_by_test_id("assistant-message").last).to_contain_text("done:", timeout=15000)


def test_an_edited_call_shows_the_arguments_that_ran_edited_from_the_models(tab: Page) -> None:
    ask(tab, "pay 21 (edit, card)")
    card = tab.get_by_test_id("tool-call")
    expect(card.get_by_test_id("tool-status")).to_have_text("waiting")
    bubble = tab.get_by_test_id("assistant-message").filter(has=card)
    expect(bubble.get_by_test_id("regenerate")).to_have_count(0)  # refused while calls wait
    shoot(tab, "tool-card-waiting")
    approval = tab.get_by_test_id("approval-card")
    approval.get_by_test_id("approval-edit").click()
    approval.get_by_test_id("approval-args-editor").fill('{"amount": 22}')
    approval.get_by_test_id("approval-edit-submit").click()
    done(tab)
    for _ in range(2):  # as it ends, and as stored (after a reload)
        card = tab.get_by_test_id("tool-call")
        expect(card).to_have_count(1)
        expect(card.get_by_test_id("tool-status")).to_have_text("edited")
        expect(card.get_by_test_id("tool-args")).to_have_text('{\n  "amount": 22\n}')
        expect(card.get_by_test_id("tool-edited-from")).to_contain_text('"amount": 21')
        expect(card.get_by_test_id("tool-result")).to_contain_text("charged 22")
        expect(card.get_by_test_id("tool-duration")).to_have_text(re.compile(r"^\d+(\.\d+)? m?s$"))
        expect(tab.get_by_test_id("tool-orphan")).to_have_count(0)  # the result is on the card, not a bubble of its own
        tab.reload()
    shoot(tab, "tool-card-edited")


def test_a_rejected_call_says_so_with_the_reason(tab: Page) -> None:
    ask(tab, "pay 23 (reject, card)")
    approval = tab.get_by_test_id("approval-card")
    approval.get_by_test_id("approval-reject").click()
    approval.get_by_test_id("approval-reason").fill("not this month")
    approval.get_by_test_id("approval-reason").press("Enter")
    done(tab)
    card = tab.get_by_test_id("tool-call")
    expect(card.get_by_test_id("tool-status")).to_have_text("rejected")
    expect(card.get_by_test_id("tool-reason")).to_have_text("Reason: not this month")
    expect(card.get_by_test_id("tool-edited-from")).to_have_count(0)


def test_a_long_result_previews_two_lines_and_unfolds(tab: Page) -> None:
    tab.get_by_test_id("new-chat-button").click()
    tab.get_by_test_id("message-input").fill("append some lines")
    tab.get_by_test_id("message-input").press("Enter")
    done(tab)
    expect(tab.get_by_test_id("stop-button")).to_be_hidden()  # the run is over and the page has re-read it
    drawn(tab)  # ... and redrawn the answer
    card = tab.get_by_test_id("tool-call")
    expect(card.get_by_test_id("tool-status")).to_have_text("done")
    text = card.get_by_test_id("tool-result-text")
    expect(text).to_have_css("-webkit-line-clamp", "2")
    # measured in one page task: a locator's bounding box resolves the node, then reads it,
    # and a redraw in between met a detached node (None) in CI
    measure = """() => {
      const e = document.querySelector('[data-testid=tool-result-text]');
      return [e.getBoundingClientRect().height, parseFloat(getComputedStyle(e).lineHeight)];
    }"""
    folded, line = tab.evaluate(measure)
    assert folded < 3.5 * line, (folded, line)  # two lines (and padding)
    card.get_by_test_id("tool-expand").click()
    expect(card.get_by_test_id("tool-expand")).to_have_attribute("aria-expanded", "true")
    unfolded, _ = tab.evaluate(measure)
    assert unfolded > 7 * line, unfolded
    expect(text).to_contain_text("line 8 of a long result")
    shoot(tab, "tool-card-result")


def test_always_allow_shows_on_the_card_and_the_allowed_tools_panel_revokes_it(tab: Page, gated: App) -> None:
    ask(tab, "pay 24 (always, card)")
    tab.get_by_test_id("approval-card").get_by_test_id("approval-always").click()
    done(tab)
    expect(tab.get_by_test_id("tool-call").get_by_test_id("tool-status")).to_have_text("always-allowed")
    panel = tab.get_by_test_id("allowed-tools")
    panel.locator("summary").click()
    rule = panel.get_by_test_id("allowed-rule")
    expect(rule).to_have_count(1)
    expect(rule).to_contain_text("ledger__charge")
    shoot(tab, "allowed-tools", toggle_sidebar)
    rule.get_by_role("button", name="Revoke: ask again before ledger__charge runs").click()
    expect(panel.get_by_test_id("allowed-rule")).to_have_count(0)
    expect(panel).to_contain_text("No tool is always allowed")
    assert gated.server.get("/api/approvals/always").json()["alwaysAllowed"] == []
    ask(tab, "pay 25 (asks again)")  # the rule is gone: the next charge asks again
