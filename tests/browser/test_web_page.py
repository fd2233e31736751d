"""The web page in a real browser: streaming, tools, stop, reload, crash and resume,
rename and delete, and hostile Markdown. Tests that restart the server or need an empty
database get their own (`page`); the others share one (`tab`)."""

from __future__ import annotations

import json
import re

from playwright.sync_api import APIResponse, Page, Route, expect

from tests.browser.conftest import App, drawn
from tests.support.fake_ollama import FakeOllama

ANSWER = " ".join(f"word{i}" for i in range(40))


def send(page: Page, text: str) -> None:
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("message-input").press("Enter")


def test_streamed_tokens_appear_and_the_conversation_is_listed(tab: Page, shared_ollama: FakeOllama) -> None:
    shared_ollama.add({"text": ANSWER, "token_delay": 0.05})
    expect(tab.get_by_test_id("new-chat-button")).to_have_accessible_name("Start new conversation")
    expect(tab.get_by_test_id("readiness")).to_have_text("Model ready")
    send(tab, "Hello there")
    expect(tab.get_by_test_id("user-message")).to_have_text("Hello there")
    expect(tab.get_by_text("Responding…")).to_be_visible()
    expect(tab.get_by_test_id("assistant-message").last).to_contain_text("word3")  # while streaming
    expect(tab.get_by_test_id("stop-button")).to_be_visible()
    expect(tab.get_by_test_id("assistant-message").last).to_have_text(ANSWER, timeout=15000)
    expect(tab.get_by_text("Responding…")).to_be_hidden()
    item = tab.locator(".conversation-item").first
    expect(item).to_contain_text("Hello there")
    expect(item).to_contain_text("1 turn")  # the person's messages, not every message (issue 48)
    expect(item.get_by_test_id("open-conversation")).to_have_attribute("aria-current", "true")
    expect(tab.get_by_test_id("trace-panel")).to_contain_text("ENTER")


def test_a_tool_call_and_its_result_are_shown(tab: Page, shared_ollama: FakeOllama) -> None:
    shared_ollama.add({"tool_calls": [("ledger__append", {"label": "groceries"})]}, {"text": "Noted **groceries**."})
    send(tab, "note groceries")
    expect(tab.get_by_test_id("assistant-message").last).to_contain_text("Noted groceries", timeout=15000)
    expect(tab.get_by_test_id("tool-call")).to_contain_text("ledger__append")
    result = tab.get_by_test_id("tool-result")
    expect(result).to_contain_text("ledger__append")
    expect(result.get_by_test_id("tool-result-text")).to_have_text("appended groceries")
    expect(tab.locator(".msg.assistant strong")).to_have_text("groceries")


def test_stop_cancels_the_run_and_offers_resume(tab: Page, shared_ollama: FakeOllama) -> None:
    shared_ollama.add({"text": "slow " * 300, "token_delay": 0.05}, {"text": "Finished after resume."})
    send(tab, "talk slowly")
    expect(tab.get_by_test_id("assistant-message").last).to_contain_text("slow")
    tab.get_by_test_id("stop-button").click()
    expect(tab.get_by_test_id("resume-banner")).to_be_visible(timeout=10000)
    expect(tab.locator(".conversation-item").first.locator(".badge")).to_have_text("cancelled")
    tab.get_by_test_id("resume-button").click()
    # the answer goes on inside the stopped bubble (issue 33 item 18)
    expect(tab.get_by_test_id("assistant-message").last).to_contain_text("continuedFinished after resume.", timeout=15000)
    expect(tab.get_by_test_id("resume-banner")).to_be_hidden()


def test_a_reload_mid_stream_reattaches_without_losing_or_doubling_text(tab: Page, shared_ollama: FakeOllama) -> None:
    shared_ollama.add({"tool_calls": [("ledger__append", {"label": "x"})]}, {"text": ANSWER, "token_delay": 0.08})
    send(tab, "tool then talk")
    expect(tab.get_by_test_id("assistant-message").last).to_contain_text("word5", timeout=15000)
    tab.reload()
    bubble = tab.get_by_test_id("assistant-message").last
    expect(bubble).to_contain_text("word8", timeout=15000)
    partial = bubble.inner_text()
    assert ANSWER.startswith(partial.strip()), partial  # replayed from the start, not doubled
    expect(bubble).to_have_text(ANSWER, timeout=15000)
    expect(tab.get_by_test_id("tool-result")).to_have_count(1)
    expect(tab.get_by_test_id("user-message")).to_have_count(1)


def test_a_server_killed_mid_run_comes_back_with_a_resume_banner(page: Page, app: App, ollama: FakeOllama) -> None:
    ollama.add({"text": "slow " * 300, "token_delay": 0.05}, {"text": "Resumed to the end."})
    send(page, "survive a crash")
    expect(page.get_by_test_id("assistant-message").last).to_contain_text("slow")
    app.restart(kill=True)
    page.reload()
    expect(page.get_by_test_id("resume-banner")).to_contain_text("The server stopped during this answer. Its progress is saved")
    expect(page.get_by_test_id("resume-button")).to_have_text("Resume")
    expect(page.locator(".conversation-item .badge")).to_have_text("interrupted")
    page.get_by_test_id("resume-button").click()
    expect(page.get_by_test_id("assistant-message").last).to_have_text("Resumed to the end.", timeout=15000)
    expect(page.locator(".conversation-item .badge")).to_have_count(0)


def test_rename_inline_and_delete_with_undo(page: Page, ollama: FakeOllama) -> None:
    send(page, "first conversation")
    expect(page.get_by_test_id("assistant-message").last).to_have_text("Done.", timeout=15000)
    page.on("dialog", lambda d: (_ for _ in ()).throw(AssertionError(f"a browser dialog: {d.message}")))
    page.get_by_test_id("rename-button").first.click()
    box = page.get_by_test_id("rename-input")
    expect(box).to_be_focused()
    expect(box).to_have_value("first conversation")
    box.fill("Not this")
    box.press("Escape")  # cancels
    expect(page.locator(".conversation-item .title").first).to_have_text("first conversation")
    page.get_by_test_id("rename-button").first.click()
    page.get_by_test_id("rename-input").fill("Renamed chat")
    page.get_by_test_id("rename-input").press("Enter")
    expect(page.locator(".conversation-item .title").first).to_have_text("Renamed chat")
    expect(page.get_by_test_id("current-title")).to_have_text("Renamed chat")
    page.get_by_test_id("delete-button").first.click()
    expect(page.locator(".conversation-item")).to_have_count(0)  # gone at once...
    expect(page.get_by_test_id("undo-toast")).to_contain_text('Deleted "Renamed chat"')
    page.get_by_test_id("undo-button").click()  # ...and back with Undo
    expect(page.locator(".conversation-item")).to_have_count(1)
    expect(page.get_by_test_id("current-title")).to_have_text("Renamed chat")
    page.wait_for_timeout(5500)
    expect(page.locator(".conversation-item")).to_have_count(1)  # undone: never deleted
    page.get_by_test_id("delete-button").first.click()
    expect(page.get_by_test_id("undo-toast")).to_be_visible()
    expect(page.get_by_test_id("undo-toast")).to_be_hidden(timeout=8000)  # the time is up: deleted
    page.reload()
    expect(page.get_by_text("No conversations yet")).to_be_visible()


def test_hostile_markdown_renders_inert(tab: Page, shared_ollama: FakeOllama) -> None:
    hostile = (
        'Look <img src=x onerror="window.__pwned=1"> and [click me](javascript:window.__pwned=2) '
        "and ![a cat](http://127.0.0.1:9/cat.png) and [docs](https://example.org)"
    )
    shared_ollama.add({"text": hostile})
    requests: list[str] = []
    tab.on("request", lambda r: requests.append(r.url))
    send(tab, '<img src=x onerror="window.__pwned=3">')
    bubble = tab.get_by_test_id("assistant-message").last
    expect(bubble).to_contain_text("docs", timeout=15000)
    expect(tab.get_by_test_id("user-message")).to_have_text('<img src=x onerror="window.__pwned=3">')
    assert tab.evaluate("window.__pwned") is None
    assert tab.locator("#messages img").count() == 0
    expect(bubble.get_by_role("link", name="Image a cat")).to_have_attribute("href", "http://127.0.0.1:9/cat.png")
    click = bubble.locator("a", has_text="click me")
    expect(click).to_have_count(1)
    assert not (click.get_attribute("href") or "").lower().startswith("javascript")
    docs = bubble.get_by_role("link", name="docs")
    expect(docs).to_have_attribute("target", "_blank")
    expect(docs).to_have_attribute("rel", "noopener noreferrer nofollow")
    assert not any("cat.png" in u for u in requests)  # the image was never fetched


def test_markup_that_would_load_media_is_dropped_not_only_blocked(tab: Page, shared_ollama: FakeOllama) -> None:
    media = (
        'Media <video poster="http://127.0.0.1:9/p.png" src="http://127.0.0.1:9/v.mp4"></video> '
        '<audio src="http://127.0.0.1:9/a.mp3"></audio>\n\n'
        '<table><tr><td background="http://127.0.0.1:9/bg.png">cell</td></tr></table>\n\nend of media'
    )
    shared_ollama.add({"text": media})
    send(tab, "show me media")
    bubble = tab.get_by_test_id("assistant-message").last
    expect(bubble).to_contain_text("end of media", timeout=15000)
    assert bubble.locator("video, audio, source, [poster], [background]").count() == 0
    expect(bubble.locator("td")).to_have_text("cell")


def test_the_page_works_at_375_pixels_and_exports_are_linked(tab: Page, shared_app: App, shared_ollama: FakeOllama) -> None:
    tab.set_viewport_size({"width": 375, "height": 740})
    send(tab, "small screen")
    expect(tab.get_by_test_id("assistant-message").last).to_have_text("Done.", timeout=15000)
    expect(tab.get_by_test_id("message-input")).to_be_in_viewport()
    cid = re.search(r"/api/conversations/([0-9a-f-]+)/export", tab.locator("#export-md").get_attribute("href") or "")
    assert cid is not None
    body = tab.request.get(f"{shared_app.server.url}/api/conversations/{cid.group(1)}/export?format=jsonl").text()
    assert json.loads(body.strip().split("\n")[-1])["next"] == []


def test_a_model_error_shows_its_code_beside_the_composer(tab: Page, shared_ollama: FakeOllama) -> None:
    shared_ollama.add({"status": 404})
    send(tab, "anyone there?")
    banner = tab.get_by_test_id("composer-error")
    expect(banner.get_by_test_id("error-code")).to_have_text("MODEL_UNAVAILABLE", timeout=15000)
    expect(tab.locator(".conversation-item").first.locator(".badge")).to_have_text("failed")
    expect(tab.get_by_test_id("resume-banner")).to_be_visible()


def test_an_unsafe_call_cut_short_asks_retry_or_skip(page: Page, app: App, ollama: FakeOllama) -> None:
    ollama.add({"tool_calls": [("ledger__charge", {"amount": 5, "delay": 30})]}, {"text": "Skipped the charge."})
    send(page, "pay five")
    expect(page.get_by_test_id("tool-call")).to_contain_text("ledger__charge", timeout=15000)
    ledger = app.tmp / "ledger.jsonl"
    deadline = __import__("time").monotonic() + 15
    while not (ledger.exists() and "charge-5" in ledger.read_text()) and __import__("time").monotonic() < deadline:
        page.wait_for_timeout(100)
    app.restart(kill=True)  # the charge was in flight: its outcome is unknown
    page.reload()
    banner = page.get_by_test_id("resume-banner")
    expect(banner).to_contain_text("ledger__charge")
    expect(page.get_by_test_id("resume-button")).to_be_hidden()
    page.get_by_test_id("skip-button").click()
    expect(page.get_by_test_id("assistant-message").last).to_have_text("Skipped the charge.", timeout=15000)
    result = page.get_by_test_id("tool-result")
    expect(result).to_contain_text("ledger__charge")
    expect(result.get_by_role("img", name="Failed")).to_be_visible()
    starts = [line for line in ledger.read_text().splitlines() if '"start"' in line and "charge-5" in line]
    assert len(starts) == 1  # skipped, not run again


def test_a_message_sent_before_the_list_loads_stays_in_its_own_conversation(tab: Page, shared_ollama: FakeOllama) -> None:
    """The page opens the latest conversation once its list loads, unless the person chose
    one first; sending a message is a choice (the list held here answers as it was before)."""
    shared_ollama.add({"text": "The older answer."}, {"text": "The newer answer.", "token_delay": 0.02})
    send(tab, "older")
    expect(tab.get_by_test_id("assistant-message").last).to_have_text("The older answer.", timeout=15000)
    drawn(tab)  # the list re-read after that run is in: the request held below is the reloaded page's
    held: list[tuple[Route, APIResponse]] = []

    def hold_the_first(route: Route) -> None:
        if held:
            route.continue_()
        else:
            held.append((route, route.fetch()))  # the list as it is now, answered later

    tab.route(re.compile(r"/api/conversations\?(?!pinned)"), hold_the_first)  # the list, not its pinned ones
    tab.reload()
    send(tab, "newer")  # the page has no list yet: an empty new chat
    expect(tab.get_by_test_id("assistant-message").last).to_contain_text("The newer", timeout=15000)
    assert len(held) == 1
    route, response = held[0]
    route.fulfill(response=response)
    expect(tab.get_by_test_id("assistant-message").last).to_have_text("The newer answer.", timeout=15000)
    drawn(tab)
    expect(tab.get_by_test_id("user-message")).to_have_text(["newer"])
