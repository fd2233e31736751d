"""Knowledge collections on the page (issue 45 item 3), in Chromium against a real server
and the fake Ollama: files uploaded into a collection in the settings panel, the composer's
picker writes `#name`, the model request holds the collection's best passage, and the
answer's citation is a link that opens the cited passage."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import App, open_page
from tests.browser.test_organising import send
from tests.browser.test_presets import settings
from tests.support.fake_ollama import FakeOllama

GUIDE = "# Keeping the light\n\nThe lighthouse keeper winds the clockwork at dusk.\nThe lamp burns paraffin.\n"
BAKERY = "".join(f"Row {i}: bread, flour and water are weighed at the bakery.\n" for i in range(200))


def answer(body: dict[str, Any]) -> dict[str, Any]:
    text = body["messages"][-1]["content"]
    if "[guide.md:1-4] (#lights)" in text:
        return {"text": "At dusk, says the guide [guide.md:1-4]."}
    return {"text": "I found nothing."}


@pytest.fixture
def knowledge_app(tmp_path: Path, ollama: FakeOllama) -> Iterator[App]:
    ollama.responder = answer
    a = App(tmp_path, ollama, TOOLS_BACKEND="none")
    yield a
    a.server.stop()


@pytest.fixture
def page(browser: Browser, knowledge_app: App, request: pytest.FixtureRequest) -> Iterator[Page]:
    with open_page(browser, knowledge_app.server.url, request.node.name) as pg:
        yield pg


def test_a_collection_uploaded_on_the_page_answers_with_a_cited_passage_that_opens(page: Page, ollama: FakeOllama) -> None:
    settings(page)
    page.get_by_test_id("knowledge-panel").locator("summary").click()
    page.get_by_test_id("knowledge-collection").fill("lights")
    page.get_by_test_id("knowledge-files").set_input_files(
        [
            {"name": "guide.md", "mimeType": "text/markdown", "buffer": GUIDE.encode()},
            {"name": "bakery.csv", "mimeType": "text/csv", "buffer": BAKERY.encode()},
        ]
    )
    page.get_by_test_id("knowledge-upload").click()
    expect(page.get_by_test_id("knowledge-note")).to_have_text("guide.md: added, bakery.csv: added")
    expect(page.get_by_test_id("knowledge-name")).to_have_text(["#lights"])

    page.get_by_test_id("knowledge-picker").select_option("lights")
    expect(page.get_by_test_id("message-input")).to_have_value("#lights ")
    before = len(ollama.requests)
    send(page, "#lights when does the keeper wind the clockwork?")
    sent = ollama.requests[before]["messages"][-1]["content"]
    assert "[guide.md:1-4] (#lights)\n# Keeping the light" in sent and "Row 3: bread" not in sent

    link = page.get_by_test_id("assistant-message").last.get_by_test_id("citation")
    expect(link).to_have_text("[guide.md:1-4]")
    link.click()
    passage = page.get_by_test_id("cited-passage")
    expect(passage).to_contain_text("#lights · guide.md · lines 1-4")
    expect(passage).to_contain_text("The lighthouse keeper winds the clockwork at dusk.")
    page.reload()
    expect(page.get_by_test_id("assistant-message").last.get_by_test_id("citation")).to_have_text("[guide.md:1-4]")
