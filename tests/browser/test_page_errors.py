"""Errors read as sentences (issue 48 item 11): a plain sentence first, the code in small
print, next to the control that caused it (the composer, the import button, a conversation's
row), and no `sophos …` or `make …` command in what the page shows. Screenshots:
test-results/browser/error-*-1280.png and -375.png."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Locator, Page, Route, expect

from tests.browser.conftest import App, open_page, shoot, toggle_sidebar
from tests.support.fake_ollama import FakeOllama

COMMANDS = re.compile(r"`(?:sophos|make) |\bsophos [a-z]+\b|\bmake (?:demo|run|install|test|bench)\b")

# one task from finding the note to measuring it: the sidebar redraws its rows (and their notes)
SHAPE = """(id) => {
  const note = document.querySelector(`[data-testid="${id}"]`);
  const lead = note.querySelector('[data-testid=error-lead]'), code = note.querySelector('[data-testid=error-code]');
  const text = note.querySelector('.error-text').textContent.trim();
  return { lead: lead.textContent, code: code.textContent, text, codeSmall: code.tagName === 'SMALL',
    leadSize: parseFloat(getComputedStyle(lead).fontSize), codeSize: parseFloat(getComputedStyle(code).fontSize) };
}"""


def reads_as_a_sentence(page: Page, testid: str, code: str) -> dict[str, Any]:
    """The note starts with a plain sentence (not the code, not "Error:"), ends with its code
    in small print, and names no command of the CLI or of make."""
    expect(page.get_by_test_id(testid)).to_be_visible()
    seen: dict[str, Any] = page.evaluate(SHAPE, testid)
    assert seen["code"] == code and seen["codeSmall"] and seen["codeSize"] < seen["leadSize"], seen
    assert seen["text"].startswith(seen["lead"]) and seen["text"].endswith(code), seen
    assert re.match(r"[A-Z][a-z]", seen["lead"]) and seen["lead"].endswith("."), seen  # words, not a CODE
    assert not seen["text"].startswith("Error") and not COMMANDS.search(seen["text"]), seen
    return seen


def gap(above: Locator, below: Locator) -> float:
    a, b = above.bounding_box(), below.bounding_box()
    assert a is not None and b is not None
    return b["y"] - (a["y"] + a["height"])


def test_a_failed_answer_is_a_sentence_beside_the_composer(tab: Page, shared_ollama: FakeOllama) -> None:
    shared_ollama.add({"status": 404})
    tab.get_by_test_id("message-input").fill("is the model there?")
    tab.get_by_test_id("message-input").press("Enter")
    note = tab.get_by_test_id("composer-error")
    expect(note).to_be_visible(timeout=15000)
    seen = reads_as_a_sentence(tab, "composer-error", "MODEL_UNAVAILABLE")
    assert seen["lead"] == "The model server does not have this model.", seen
    expect(tab.get_by_test_id("error-banner")).to_be_hidden()  # not at the top of the page, far from the box
    assert 0 <= gap(note, tab.locator("#composer")) < 12  # right above the message box
    shoot(tab, "error-composer")
    tab.set_viewport_size({"width": 375, "height": 740})
    assert 0 <= gap(note, tab.locator("#composer")) < 12
    tab.set_viewport_size({"width": 1280, "height": 800})


def test_a_refused_import_is_a_sentence_beside_the_import_button(tab: Page) -> None:
    tab.get_by_test_id("import-file").set_input_files(
        {"name": "nonsense.json", "mimeType": "application/json", "buffer": json.dumps({"nope": 1}).encode()}
    )
    note = tab.get_by_test_id("transfer-error")
    expect(note).to_be_visible(timeout=15000)
    reads_as_a_sentence(tab, "transfer-error", "BAD_REQUEST")
    expect(tab.get_by_test_id("error-banner")).to_be_hidden()
    assert 0 <= gap(tab.get_by_test_id("import-button"), note) < 40  # under the button that was used
    shoot(tab, "error-import", toggle_sidebar)


def test_a_refused_rename_is_a_sentence_under_the_conversation(tab: Page, shared_ollama: FakeOllama) -> None:
    tab.get_by_test_id("message-input").fill("a title to keep")
    tab.get_by_test_id("message-input").press("Enter")
    expect(tab.get_by_test_id("assistant-message").last).to_have_text("Done.", timeout=15000)

    def refuse(route: Route) -> None:
        if route.request.method != "PATCH":
            route.fallback()
            return
        route.fulfill(
            status=503,
            content_type="application/json",
            body=json.dumps({"error": {"code": "STORAGE_FAILURE", "message": "The database could not be written"}}),
        )

    tab.route(re.compile(r".*/api/conversations/[0-9a-f-]+$"), refuse)
    row = tab.locator(".conversation-item", has_text="a title to keep")
    row.get_by_test_id("rename-button").click()
    tab.get_by_test_id("rename-input").fill("a new title")
    tab.get_by_test_id("rename-input").press("Enter")
    note = tab.get_by_test_id("row-error")
    expect(note).to_be_visible()
    seen = reads_as_a_sentence(tab, "row-error", "STORAGE_FAILURE")
    assert "The database could not be written." in seen["text"]
    under = tab.evaluate("""() => {
      const note = document.querySelector('[data-testid=row-error]'), row = note.closest('li').previousElementSibling;
      return [row.textContent, note.getBoundingClientRect().top - row.getBoundingClientRect().bottom];
    }""")
    assert "a title to keep" in under[0] and 0 <= under[1] < 12, under  # under the row that was renamed
    expect(tab.get_by_test_id("error-banner")).to_be_hidden()
    note.get_by_role("button", name="Dismiss").click()
    expect(note).to_have_count(0)


def test_without_a_model_no_banner_names_a_command(browser: Browser, tmp_path: Path) -> None:
    app = App(tmp_path, None)  # nothing listens where the model should be; the server's fix names `make demo`
    try:
        assert "make demo" in app.server.get("/api/readyz").json()["fix"]
        with open_page(browser, app.server.url, "error-no-model") as page:
            fix = page.get_by_test_id("readiness-fix")
            expect(fix).to_contain_text("ollama serve")
            page.get_by_test_id("example-prompt").first.click()
            expect(page.get_by_test_id("send-reason")).to_be_visible()
            for shown in ("readiness", "readiness-fix", "empty-status", "send-reason"):
                text = page.get_by_test_id(shown).inner_text()
                assert not COMMANDS.search(text), (shown, text)
            assert re.search(r"OLLAMA_HOST\.?$", fix.inner_text().strip()), fix.inner_text()  # the sentence still ends well
    finally:
        app.server.stop()
