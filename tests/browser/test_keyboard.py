"""The keyboard in a long chat (issue 33 items 13 and 14): one tab stop per message, its
controls reached with the arrow keys and its icons shown on hover or focus; ChatGPT's
shortcuts and a `?` overlay listing them."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.conftest import drawn, shoot
from tests.support.fake_ollama import FakeOllama

CODE = "Here it is:\n\n```python\nprint('hi')\n```\n\nThat prints hi."
TAB_STOPS = """() => [...document.querySelectorAll('#messages *')].filter((e) => e.tabIndex >= 0 &&
  (e.matches('button, a[href], summary, textarea, input, [tabindex]'))).length"""


def send(page: Page, text: str, reply: str) -> None:
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("message-input").press("Enter")
    expect(page.get_by_test_id("assistant-message").last).to_contain_text(reply, timeout=15000)
    # the run has ended once the page gives the composer the focus back: a focus (or an Enter,
    # which would queue) before that races with it
    expect(page.get_by_test_id("message-input")).to_be_focused(timeout=15000)


def chat(tab: Page, shared_ollama: FakeOllama) -> None:
    shared_ollama.add({"text": "First answer."}, {"text": CODE}, {"text": "Third answer."})
    send(tab, "keys one", "First answer.")
    send(tab, "keys two", "That prints hi.")
    send(tab, "keys three", "Third answer.")
    drawn(tab)  # the run's end handled: the focus it gives the message box is given


def test_each_message_is_one_tab_stop_with_its_controls_on_the_arrow_keys(tab: Page, shared_ollama: FakeOllama) -> None:
    chat(tab, shared_ollama)
    messages = tab.locator("#messages > .msg")
    expect(messages).to_have_count(6)
    assert tab.evaluate(TAB_STOPS) == 6  # not one per button, code copy and link as before
    first = messages.first
    first.focus()
    tab.keyboard.press("Tab")
    expect(messages.nth(1)).to_be_focused()  # the next message, not the first one's buttons
    answer = messages.nth(3)  # the answer with the code block
    answer.focus()
    actions = answer.get_by_test_id("message-actions")
    expect(actions).to_have_css("opacity", "1")  # shown while the message has the focus
    expect(messages.nth(5).get_by_test_id("message-actions")).to_have_css("opacity", "0")  # reserved no row
    tab.keyboard.press("ArrowRight")
    expect(answer.get_by_test_id("copy-code")).to_be_focused()
    tab.keyboard.press("ArrowRight")
    expect(tab.locator(":focus")).to_have_attribute("data-testid", "fork-message")
    tab.keyboard.press("ArrowRight")
    expect(tab.locator(":focus")).to_have_attribute("data-testid", "copy-message")
    shoot(tab, "message-focus")
    tab.keyboard.press("Escape")
    expect(answer).to_be_focused()
    tab.keyboard.press("ArrowDown")
    expect(messages.nth(4)).to_be_focused()
    tab.keyboard.press("ArrowUp")
    expect(answer).to_be_focused()


def test_the_shortcuts_work_and_question_mark_lists_them(tab: Page, shared_ollama: FakeOllama) -> None:
    tab.context.grant_permissions(["clipboard-read", "clipboard-write"])
    chat(tab, shared_ollama)
    tab.get_by_test_id("current-title").click()  # the focus leaves the message box
    tab.keyboard.press("?")
    overlay = tab.get_by_test_id("shortcuts")
    expect(overlay).to_be_visible()
    for what in (
        "New chat",
        "Search conversations",
        "Copy the last answer",
        "Copy the last code block",
        "Stop the answer",
        "Edit your last message",
        "Focus the message box",
    ):
        expect(overlay).to_contain_text(what)
    shoot(tab, "shortcuts")
    tab.keyboard.press("Escape")
    expect(overlay).to_be_hidden()
    tab.keyboard.press("Control+/")
    expect(overlay).to_be_visible()
    tab.get_by_test_id("shortcuts-close").click()
    expect(overlay).to_be_hidden()

    tab.keyboard.press("Control+Shift+C")
    expect(tab.get_by_test_id("notice").last).to_have_text("Copied the last answer")
    assert tab.evaluate("navigator.clipboard.readText()") == "Third answer."
    tab.keyboard.press("Control+Shift+Semicolon")
    expect(tab.get_by_test_id("notice").last).to_have_text("Copied the last code block")
    assert tab.evaluate("navigator.clipboard.readText()").strip() == "print('hi')"

    tab.keyboard.press("Control+K")
    expect(tab.get_by_test_id("search")).to_be_focused()
    tab.keyboard.press("Shift+Escape")
    expect(tab.get_by_test_id("message-input")).to_be_focused()
    tab.keyboard.press("ArrowUp")  # in the empty box: edit the last message
    expect(tab.get_by_test_id("edit-input")).to_have_value("keys three")
    tab.get_by_test_id("edit-input").press("Escape")
    expect(tab.get_by_test_id("message-editor")).to_have_count(0)

    tab.keyboard.press("Control+Shift+S")
    expect(tab.get_by_test_id("sidebar")).to_be_hidden()
    tab.keyboard.press("Control+Shift+S")
    expect(tab.get_by_test_id("sidebar")).to_be_visible()
    tab.keyboard.press("Control+Shift+O")
    expect(tab.get_by_test_id("current-title")).to_have_text("New conversation")
    expect(tab.get_by_test_id("empty-state")).to_be_visible()
    expect(tab.get_by_test_id("message-input")).to_be_focused()
