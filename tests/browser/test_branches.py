"""Edit, regenerate and branch switching on the page, in a real browser against a real
server: the pencil's inline editor, the regenerate button, and `‹ 2/3 ›` switching
without a reload."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.conftest import shoot
from tests.integration.test_branches import Answers
from tests.support.fake_ollama import FakeOllama


def send(page: Page, text: str) -> None:
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("message-input").press("Enter")


def answered(page: Page, text: str) -> None:
    expect(page.get_by_test_id("assistant-message").last).to_contain_text(text, timeout=15000)
    expect(page.get_by_text("Responding…")).to_be_hidden()


def test_edit_regenerate_and_switch_branches_without_a_reload(page: Page, ollama: FakeOllama) -> None:
    ollama.responder = Answers()
    send(page, "first question")
    answered(page, "answer 1 to first question")
    send(page, "second question")
    answered(page, "answer 2 to second question")
    page.evaluate("window.__sameDocument = true")  # gone if anything below reloads the page

    second = page.get_by_test_id("user-message").nth(1)
    second.hover()
    second.get_by_test_id("edit-message").click()
    editor = page.get_by_test_id("message-editor")
    expect(editor.get_by_test_id("edit-input")).to_have_value("second question")
    editor.get_by_test_id("edit-input").fill("second question, rephrased")
    shoot(page, "branch-edit")
    editor.get_by_test_id("edit-save").click()
    answered(page, "answer 3 to second question, rephrased")
    expect(page.get_by_test_id("user-message")).to_have_count(2)
    nav = page.get_by_test_id("user-message").nth(1).get_by_test_id("branch-nav")
    expect(nav.get_by_test_id("branch-count")).to_have_text("2/2")

    page.get_by_test_id("assistant-message").last.get_by_test_id("regenerate").click()
    answered(page, "answer 4 to second question, rephrased")
    answer_nav = page.get_by_test_id("assistant-message").last.get_by_test_id("branch-nav")
    expect(answer_nav.get_by_test_id("branch-count")).to_have_text("2/2")
    shoot(page, "branch-switcher")

    answer_nav.get_by_test_id("branch-prev").click()  # the rephrased question's first answer
    expect(page.get_by_test_id("assistant-message").last.locator(".content")).to_have_text(
        "answer 3 to second question, rephrased"
    )
    nav = page.get_by_test_id("user-message").nth(1).get_by_test_id("branch-nav")
    nav.get_by_test_id("branch-prev").click()  # the original question
    expect(page.get_by_test_id("user-message").nth(1).locator(".user-text")).to_have_text("second question")
    expect(page.get_by_test_id("assistant-message").last.locator(".content")).to_have_text("answer 2 to second question")
    expect(page.get_by_test_id("user-message").nth(1).get_by_test_id("branch-count")).to_have_text("1/2")
    expect(page.get_by_test_id("user-message").nth(1).get_by_test_id("branch-prev")).to_be_disabled()
    assert page.evaluate("window.__sameDocument") is True

    page.reload()  # the switch is stored: a reload shows the same branch
    expect(page.get_by_test_id("assistant-message").last.locator(".content")).to_have_text("answer 2 to second question")
    expect(page.locator(".conversation-item").first).to_contain_text("2 turns")  # of the branch shown


def test_cancel_and_escape_leave_the_message_as_it_was(page: Page, ollama: FakeOllama) -> None:
    ollama.responder = Answers()
    send(page, "only question")
    answered(page, "answer 1 to only question")
    page.get_by_test_id("user-message").first.get_by_test_id("edit-message").click()
    page.get_by_test_id("edit-input").fill("changed")
    page.get_by_test_id("edit-cancel").click()
    expect(page.get_by_test_id("message-editor")).to_have_count(0)
    expect(page.get_by_test_id("user-message").first.locator(".user-text")).to_have_text("only question")
    page.get_by_test_id("user-message").first.get_by_test_id("edit-message").click()
    page.get_by_test_id("edit-input").press("Escape")
    expect(page.get_by_test_id("message-editor")).to_have_count(0)
    expect(page.get_by_test_id("branch-nav")).to_have_count(0)  # nothing was sent: no branch
    assert len(ollama.requests) == 1
