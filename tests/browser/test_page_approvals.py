"""The page asks before acting: a card per tool call waiting for approval, against a real
server with TOOL_APPROVAL=unsafe and the ledger MCP server, whose `charge` is destructive and
records every execution. Screenshots: test-results/browser/approval-*-1280.png and -375.png."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from tests.browser.conftest import App, open_page, shoot
from tests.support.fake_ollama import FakeOllama, fake_ollama


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The model: one charge per number in the user's message (in one step), then says what
    happened."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return {"text": f"done: {last['content'][:200]}"}
    amounts = re.findall(r"\d+", last["content"])
    return {"tool_calls": [("ledger__charge", {"amount": int(a)}) for a in amounts]} if amounts else {"text": "hello"}


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOllama]:
    with fake_ollama() as fake:
        fake.responder = answer
        yield fake


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory, model: FakeOllama) -> Iterator[App]:
    """One server for the module: each test has its own message, amount and conversation."""
    a = App(tmp_path_factory.mktemp("approvals"), model, TOOL_APPROVAL="unsafe")
    yield a
    a.server.stop()


@pytest.fixture
def tab(browser: Browser, gated: App, request: pytest.FixtureRequest) -> Iterator[Page]:
    with open_page(browser, gated.server.url, request.node.name) as pg:
        yield pg


def charges(app: App, text: str) -> list[dict[str, Any]]:
    """The ledger's executions of `charge` in the conversation that began with `text`."""
    found = app.server.get("/api/conversations", params={"q": text}).json()["conversations"]
    assert len(found) == 1, found
    book = app.tmp / "ledger.jsonl"
    lines = [json.loads(x) for x in book.read_text().splitlines()] if book.exists() else []
    return [e for e in lines if e["event"] == "start" and (e["key"] or "").startswith(f"{found[0]['id']}:")]


def ask(page: Page, text: str, cards: int = 1) -> None:
    page.get_by_test_id("new-chat-button").click()
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("message-input").press("Enter")
    expect(page.get_by_test_id("approval-card")).to_have_count(cards, timeout=15000)


def test_approving_a_card_runs_the_call_exactly_once(tab: Page, gated: App) -> None:
    ask(tab, "pay 11 (approve on the page)")
    card = tab.get_by_test_id("approval-card")
    expect(card).to_contain_text("ledger__charge")
    expect(card).to_contain_text("on ledger")
    expect(card.get_by_test_id("approval-args")).to_have_text('{\n  "amount": 11\n}')
    expect(card.get_by_test_id("approval-description")).to_contain_text("destructive")
    expect(tab.get_by_test_id("resume-banner")).to_be_hidden()  # the card is the question, not Resume
    expect(tab.locator(".conversation-item .badge").first).to_have_text("waiting")
    assert charges(gated, "pay 11 (approve on the page)") == []
    shoot(tab, "approval-card")
    card.get_by_role("button", name="Approve ledger__charge").click()
    expect(tab.get_by_test_id("assistant-message").last).to_have_text("done: charged 11", timeout=15000)
    expect(tab.get_by_test_id("approval-card")).to_have_count(0)
    assert len(charges(gated, "pay 11 (approve on the page)")) == 1


def test_editing_a_card_refuses_bad_json_shows_the_servers_400_and_runs_the_edited_arguments(tab: Page, gated: App) -> None:
    ask(tab, "pay 12 (edit on the page)")
    card = tab.get_by_test_id("approval-card")
    card.get_by_test_id("approval-edit").click()
    editor = card.get_by_test_id("approval-args-editor")
    expect(editor).to_be_focused()
    editor.fill('{"amount": 120')
    card.get_by_test_id("approval-edit-submit").click()
    expect(card.get_by_test_id("approval-error")).to_contain_text("Not valid JSON")
    editor.fill('{"amount": "a lot"}')  # JSON, but not what the tool's schema accepts
    card.get_by_test_id("approval-edit-submit").click()
    expect(card.get_by_test_id("approval-error")).to_contain_text("amount", timeout=10000)
    shoot(tab, "approval-edit")
    assert charges(gated, "pay 12 (edit on the page)") == []
    editor.fill('{"amount": 120}')
    editor.press("Control+Enter")
    expect(tab.get_by_test_id("assistant-message").last).to_contain_text("charged 120", timeout=15000)
    ran = charges(gated, "pay 12 (edit on the page)")
    assert [e["label"] for e in ran] == ["charge-120"]


def test_the_end_of_the_run_leaves_the_focus_in_a_reason_being_typed(tab: Page, gated: App, model: FakeOllama) -> None:
    """A card shows as the run waits; the run's end re-reads the conversation, then focused the
    composer, taking the focus from a reason the person had started (a CI run met it). The
    re-read is held here until the person has clicked Reject."""
    held: list[Route] = []

    def hold_the_first(route: Route) -> None:
        if held:
            route.continue_()
        else:
            held.append(route)

    detail = re.compile(r"/api/conversations/[0-9a-f-]{36}$")
    expect(tab.get_by_test_id("message-input")).to_be_focused()  # the page has loaded (and opened the latest conversation)
    tab.route(detail, hold_the_first)
    model.latency = 0.5  # the stream is attached when the call comes to wait: the card comes from its event
    try:
        ask(tab, "pay 14 (reject as the run ends)")
    finally:
        model.latency = 0.0
    card = tab.get_by_test_id("approval-card")
    card.get_by_test_id("approval-reject").click()
    reason = card.get_by_test_id("approval-reason")
    expect(reason).to_be_focused()
    reason.type("not now")
    for _ in range(200):  # the run's end has asked for the conversation
        if held:
            break
        tab.wait_for_timeout(50)
    assert len(held) == 1
    with tab.expect_response(detail):
        held[0].continue_()
    tab.evaluate("() => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 50)))")  # the end's redraw
    expect(reason).to_be_focused()
    expect(reason).to_have_value("not now")
    reason.press("Enter")
    expect(tab.get_by_test_id("assistant-message").last).to_contain_text("not now", timeout=15000)


def test_rejecting_a_card_runs_nothing_and_the_model_gets_the_reason(tab: Page, gated: App, model: FakeOllama) -> None:
    ask(tab, "pay 13 (reject on the page)")
    card = tab.get_by_test_id("approval-card")
    card.get_by_test_id("approval-reject").click()
    reason = card.get_by_test_id("approval-reason")
    expect(reason).to_be_focused()
    reason.fill("over the monthly budget")
    shoot(tab, "approval-reject")
    reason.press("Enter")
    # the model's answer, which quotes what it was told (the rejected card shows the reason first)
    expect(tab.get_by_test_id("assistant-message").last).to_contain_text(
        re.compile("done: .*over the monthly budget"), timeout=15000
    )
    expect(tab.get_by_test_id("approval-card")).to_have_count(0)
    assert charges(gated, "pay 13 (reject on the page)") == []
    told = [m["content"] for r in model.requests for m in r["messages"] if m["role"] == "tool"]
    assert any("over the monthly budget" in t for t in told)


def test_a_waiting_card_survives_a_reload_and_a_restart_and_a_new_message_waits_for_it(tab: Page, gated: App) -> None:
    ask(tab, "pay 14 (reload on the page)")
    tab.reload()
    expect(tab.get_by_test_id("approval-card")).to_contain_text("ledger__charge", timeout=15000)
    gated.restart(kill=True)
    tab.reload()
    card = tab.get_by_test_id("approval-card")
    expect(card.get_by_test_id("approval-args")).to_have_text('{\n  "amount": 14\n}', timeout=15000)
    tab.get_by_test_id("message-input").fill("never mind, say hello")
    tab.get_by_test_id("message-input").press("Enter")  # queued and held, not refused
    queued = tab.get_by_test_id("queued-message")
    expect(queued).to_have_count(1)
    expect(queued).to_contain_text("never mind, say hello")
    expect(queued.get_by_test_id("queued-note")).to_have_text("held: sends after you answer the tool call below")
    expect(tab.get_by_test_id("message-input")).to_have_value("")
    expect(tab.get_by_test_id("error-banner")).to_be_hidden()
    shoot(tab, "approval-reload")
    card.get_by_role("button", name="Approve ledger__charge").focus()
    tab.keyboard.press("Enter")  # the keyboard is enough
    expect(tab.get_by_test_id("assistant-message").filter(has_text="done: charged 14")).to_have_count(1, timeout=15000)
    expect(tab.get_by_test_id("assistant-message").last).to_have_text("hello", timeout=15000)  # then the held message
    expect(queued).to_have_count(0)
    assert len(charges(gated, "pay 14 (reload on the page)")) == 1


def test_answering_one_of_three_cards_runs_that_call_and_leaves_two_cards(tab: Page, gated: App) -> None:
    ask(tab, "pay 16, 17 and 18 (three cards)", cards=3)
    first = tab.get_by_test_id("approval-card").filter(has_text='"amount": 17')
    first.get_by_role("button", name="Approve ledger__charge").click()
    expect(tab.get_by_test_id("tool-result")).to_contain_text("ledger__charge", timeout=15000)
    expect(tab.get_by_test_id("approval-card")).to_have_count(2)
    expect(tab.get_by_test_id("approval-card").filter(has_text='"amount": 17')).to_have_count(0)
    shoot(tab, "approval-two-left")
    assert [e["label"] for e in charges(gated, "pay 16, 17 and 18 (three cards)")] == ["charge-17"]


def test_a_card_answered_in_another_tab_says_so_and_runs_nothing_more(tab: Page, gated: App, browser: Browser) -> None:
    ask(tab, "pay 15 (two tabs)")
    with open_page(browser, gated.server.url, "approval-second-tab") as other:
        other.get_by_test_id("approval-card").get_by_test_id("approval-approve").click()
        expect(other.get_by_test_id("assistant-message").last).to_have_text("done: charged 15", timeout=15000)
    tab.get_by_test_id("approval-card").get_by_test_id("approval-always").click()
    expect(tab.get_by_test_id("approval-notice")).to_contain_text("already answered", timeout=10000)
    expect(tab.get_by_test_id("approval-card")).to_have_count(0)
    expect(tab.get_by_test_id("assistant-message").last).to_have_text("done: charged 15")
    assert len(charges(gated, "pay 15 (two tabs)")) == 1
    assert gated.server.get("/api/approvals/always").json().get("alwaysAllowed", []) == []  # the stale Always did nothing
