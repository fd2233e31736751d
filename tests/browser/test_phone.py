"""The page on a phone and for a long read (issue 48 item 14): one header row at 375 px with
the exports under a menu (the account menu beside it), a theme switch that is remembered,
"Jump to latest" when the reader scrolled up while an answer comes in, and how long a cold
model has kept the answer waiting. Screenshots: test-results/browser/phone-*.png."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import SHOTS, App, drawn, open_page, shoot
from tests.support.fake_ollama import FakeOllama

TOKEN = "phone-t0ken"

HEADER = """() => {
  const header = document.querySelector('header.header');
  const h = header.getBoundingClientRect();
  const shown = [...header.querySelectorAll('button, select, a, .readiness, #current-title')]
    .filter((e) => !e.closest('[role=menu]') && e.getClientRects().length && e.getBoundingClientRect().width > 0);
  return { top: h.top, bottom: h.bottom, height: h.height, overflow: header.scrollWidth - header.clientWidth,
    shown: shown.map((e) => { const r = e.getBoundingClientRect();
      return { id: e.id || e.dataset.testid, top: r.top, bottom: r.bottom, left: r.left, right: r.right }; }) };
}"""


@pytest.fixture
def guarded(tmp_path: Path, ollama: FakeOllama) -> Iterator[App]:
    a = App(tmp_path, ollama, API_TOKEN=TOKEN)
    yield a
    a.server.stop()


def send(page: Page, text: str) -> None:
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("message-input").press("Enter")


def test_at_375_px_the_header_is_one_row_with_the_exports_under_a_menu(browser: Browser, guarded: App) -> None:
    with open_page(browser, guarded.server.url, "phone-header", viewport={"width": 375, "height": 740}) as page:
        page.get_by_test_id("token-input").fill(TOKEN)
        page.keyboard.press("Enter")
        expect(page.get_by_test_id("account-button")).to_be_visible()  # the widest header: a login's account too
        send(page, "a conversation with a rather long title to export from a phone")
        expect(page.get_by_test_id("assistant-message").last).to_have_text("Done.", timeout=15000)
        drawn(page)
        seen: dict[str, Any] = page.evaluate(HEADER)
        ids = {e["id"] for e in seen["shown"]}
        assert {
            "menu",
            "current-title",
            "model-picker",
            "settings-toggle",
            "readiness",
            "more-button",
            "account-button",
        } <= ids, seen
        assert seen["height"] <= 52 and seen["overflow"] <= 0, seen  # one row, nothing pushed out of it
        middles = [(e["top"] + e["bottom"]) / 2 for e in seen["shown"]]
        assert max(middles) - min(middles) <= 6, seen["shown"]
        assert all(
            e["left"] >= 0 and e["right"] <= 375 and seen["top"] <= e["top"] and e["bottom"] <= seen["bottom"]
            for e in seen["shown"]
        ), seen["shown"]
        expect(page.get_by_test_id("readiness")).to_have_attribute(
            "title", re.compile("Model ready")
        )  # a dot, its words on hover
        for link in ("export-md", "export-jsonl", "export-json"):
            expect(page.get_by_test_id(link)).to_be_hidden()  # under the menu, not in the row
        page.get_by_test_id("more-button").click()
        menu = page.get_by_test_id("more-menu")
        expect(menu).to_be_visible()
        expect(page.get_by_test_id("export-md")).to_be_focused()
        for link, suffix in (("export-md", ""), ("export-jsonl", "?format=jsonl"), ("export-json", "?format=json")):
            expect(page.get_by_test_id(link)).to_be_in_viewport(ratio=1)
            expect(page.get_by_test_id(link)).to_have_attribute(
                "href", re.compile(rf"/api/conversations/[0-9a-f-]+/export{re.escape(suffix)}$")
            )
        box = menu.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375, box
        expect(page.get_by_test_id("trace-item")).to_be_visible()  # the trace, out of the row, is in the menu
        page.screenshot(path=str(SHOTS / "phone-more-menu-375.png"))
        page.keyboard.press("Escape")
        expect(menu).to_be_hidden()
        expect(page.get_by_test_id("more-button")).to_be_focused()
        page.get_by_test_id("account-button").click()  # the account's own menu, beside it
        expect(page.get_by_test_id("logout-button")).to_be_in_viewport(ratio=1)
        expect(menu).to_be_hidden()
        shoot(page, "phone-header")


def background(page: Page) -> str:
    return str(page.evaluate("getComputedStyle(document.body).backgroundColor"))


WHITE, DARK = "rgb(255, 255, 255)", "rgb(15, 17, 21)"


def test_the_theme_switch_is_light_dark_or_the_system_s_and_is_remembered(tab: Page) -> None:
    tab.emulate_media(color_scheme="light")
    assert background(tab) == WHITE
    tab.get_by_test_id("more-button").click()
    expect(tab.get_by_test_id("theme-system")).to_have_attribute("aria-checked", "true")
    tab.get_by_test_id("theme-dark").click()
    expect(tab.get_by_test_id("more-menu")).to_be_hidden()
    assert background(tab) == DARK  # dark, although the system is light
    tab.reload()
    expect(tab.get_by_test_id("readiness")).to_have_text("Model ready")
    assert background(tab) == DARK  # remembered
    tab.get_by_test_id("more-button").click()
    expect(tab.get_by_test_id("theme-dark")).to_have_attribute("aria-checked", "true")
    shoot(tab, "phone-theme-dark")
    tab.get_by_test_id("theme-light").click()
    tab.emulate_media(color_scheme="dark")
    assert background(tab) == WHITE  # light, although the system is dark
    tab.get_by_test_id("more-button").click()
    tab.get_by_test_id("theme-system").click()
    assert background(tab) == DARK  # the system's again
    tab.emulate_media(color_scheme="light")
    assert background(tab) == WHITE
    assert tab.evaluate("localStorage.getItem('sophos.theme')") is None


def test_jump_to_latest_appears_when_the_reader_scrolled_up_during_an_answer(tab: Page, shared_ollama: FakeOllama) -> None:
    tab.set_viewport_size({"width": 375, "height": 740})
    shared_ollama.add(
        {"text": "\n\n".join(f"Line {i} of a long answer." for i in range(40)), "token_delay": 0.02},
        {
            "text": "\n\n".join(f"Paragraph {i} of an answer that keeps coming." for i in range(150)) + " The end.",
            "token_delay": 0.03,
        },
    )
    send(tab, "a long answer first")
    expect(tab.get_by_test_id("assistant-message").last).to_contain_text("Line 39", timeout=30000)
    drawn(tab)
    jump = tab.get_by_test_id("jump-latest")
    expect(jump).to_be_hidden()  # at the end: nothing to jump to
    send(tab, "and another, longer")
    answer = tab.get_by_test_id("assistant-message").last
    expect(answer).to_contain_text("Paragraph 5", timeout=15000)
    tab.get_by_test_id("message-list").evaluate("(box) => { box.scrollTop = 0; }")  # the reader goes back up
    expect(jump).to_be_visible()
    expect(answer).to_contain_text("Paragraph 40", timeout=15000)  # more came in meanwhile...
    assert tab.get_by_test_id("message-list").evaluate("(box) => box.scrollTop") < 50  # ...without pulling them down
    expect(jump).to_be_in_viewport(ratio=1)
    shoot(tab, "phone-jump-to-latest")
    jump.click()
    expect(jump).to_be_hidden()
    expect(answer).to_contain_text("The end.", timeout=30000)
    expect(answer.get_by_test_id("copy-message")).to_be_in_viewport()  # kept at the end as the rest came in


def test_while_a_cold_model_loads_the_page_shows_how_long_it_has_waited(tab: Page, shared_ollama: FakeOllama) -> None:
    shared_ollama.add({"stall": 3.5, "text": "Loaded, and answering."})
    send(tab, "are you warm yet?")
    waited = tab.get_by_test_id("awaiting-time")
    expect(waited).to_have_text("Waiting for the model · 1 s", timeout=5000)
    expect(waited).to_have_text(re.compile(r"^Waiting for the model · [23] s$"), timeout=5000)  # it counts
    shoot(tab, "phone-cold-model")
    expect(tab.get_by_test_id("assistant-message").last).to_have_text("Loaded, and answering.", timeout=15000)
    expect(tab.get_by_test_id("awaiting")).to_have_count(0)
