"""Attachments on the page (Chromium) against a real server and the fake Ollama: a text
file and an image dropped on the conversation reach the model, show as chips on the
message, preview from the server, and survive a reload."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import SHOTS, App, drawn, open_page
from tests.support.fake_ollama import FakeOllama
from tests.support.files import png

CSV = "city,people\nLyon,522250\n"
PNG = png(4, 4)


@pytest.fixture
def vision_app(tmp_path: Path, ollama: FakeOllama) -> Iterator[App]:
    ollama.models = ("qwen3:latest",)
    ollama.capabilities = {"qwen3:latest": ["vision"]}
    a = App(tmp_path, ollama, TOOLS_BACKEND="none")
    yield a
    a.server.stop()


@pytest.fixture
def page(browser: Browser, vision_app: App, request: pytest.FixtureRequest) -> Iterator[Page]:
    with open_page(browser, vision_app.server.url, request.node.name) as pg:
        yield pg


DROP = """([csv, png]) => {
  const bytes = Uint8Array.from(atob(png), (c) => c.charCodeAt(0));
  const data = new DataTransfer();
  data.items.add(new File([csv], "cities.csv", { type: "text/csv" }));
  data.items.add(new File([bytes], "dot.png", { type: "image/png" }));
  const zone = document.querySelector("main");
  zone.dispatchEvent(new DragEvent("dragover", { dataTransfer: data, bubbles: true, cancelable: true }));
  zone.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
}"""


def test_a_text_file_and_an_image_dropped_on_the_page_reach_the_model_and_survive_a_reload(
    page: Page, ollama: FakeOllama
) -> None:
    ollama.add({"text": "A red dot and two cities."})
    page.evaluate(DROP, [CSV, base64.b64encode(PNG).decode()])
    expect(page.get_by_test_id("pending-attachment")).to_have_count(2)
    expect(page.get_by_test_id("send-button")).to_be_enabled()  # files alone may be sent
    page.get_by_test_id("message-input").fill("what are these?")
    page.get_by_test_id("send-button").click()
    expect(page.get_by_test_id("assistant-message").last).to_contain_text("A red dot and two cities.")
    drawn(page)  # the run's end redraw
    expect(page.get_by_test_id("pending-attachment")).to_have_count(0)
    user = ollama.requests[-1]["messages"][-1]
    assert user["images"] == [base64.b64encode(PNG).decode()]
    assert user["content"] == "\nwhat are these?\n\ncities.csv:\n```\n" + CSV + "\n```"

    page.reload()
    chips = page.get_by_test_id("user-message").last.get_by_test_id("attachment-chip")
    expect(chips).to_have_count(2)
    expect(chips.first).to_contain_text("cities.csv")
    expect(chips.last).to_contain_text("dot.png")
    page.wait_for_function(
        "() => { const i = document.querySelector('[data-testid=attachment-chip] img'); "
        "return i && i.complete && i.naturalWidth === 4; }"
    )
    chips.first.click()
    expect(page.get_by_test_id("attachment-preview")).to_contain_text("Lyon,522250")
    chips.last.click()
    expect(page.get_by_test_id("attachment-preview").last.locator("img")).to_have_attribute("alt", "dot.png")
    page.get_by_test_id("message-input").fill("")


def test_an_image_pasted_into_the_composer_becomes_a_chip_and_can_be_removed(page: Page) -> None:
    page.get_by_test_id("message-input").focus()
    page.evaluate(
        """(png) => {
      const bytes = Uint8Array.from(atob(png), (c) => c.charCodeAt(0));
      const data = new DataTransfer();
      data.items.add(new File([bytes], "image.png", { type: "image/png" }));
      document.querySelector("[data-testid=message-input]").dispatchEvent(
        new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    }""",
        base64.b64encode(PNG).decode(),
    )
    expect(page.get_by_test_id("pending-attachment")).to_have_count(1)
    expect(page.get_by_test_id("message-input")).to_have_value("")  # the image, not its name, was pasted
    page.get_by_test_id("remove-attachment").click()
    expect(page.get_by_test_id("pending-attachment")).to_have_count(0)
    expect(page.get_by_test_id("send-button")).to_be_disabled()


def test_the_page_takes_its_limits_from_the_server(browser: Browser, tmp_path: Path, ollama: FakeOllama) -> None:
    (tmp_path / "narrow").mkdir()
    (tmp_path / "off").mkdir()
    narrow = App(tmp_path / "narrow", ollama, TOOLS_BACKEND="none", MAX_ATTACHMENT_BYTES="2048", ATTACHMENT_TYPES="text")
    off = App(tmp_path / "off", ollama, TOOLS_BACKEND="none", MAX_ATTACHMENTS="0")
    try:
        with open_page(browser, narrow.server.url, "attachments-narrow") as tab:
            expect(tab.get_by_test_id("attach-input")).to_have_attribute(
                "accept", re.compile(r"^(?!.*image/).*text/markdown,\.md")
            )
            tab.evaluate(DROP, [CSV, base64.b64encode(PNG).decode()])  # the image is refused before it is read
            expect(tab.get_by_test_id("composer-error")).to_contain_text(
                "dot.png: image/png is not a file type this server accepts (text, code, Markdown, CSV, JSON)"
            )
            expect(tab.get_by_test_id("pending-attachment")).to_have_count(1)
            tab.evaluate("""() => {
              const data = new DataTransfer();
              data.items.add(new File(["x".repeat(2049)], "big.txt", { type: "text/plain" }));
              document.querySelector("main").dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
            }""")
            expect(tab.get_by_test_id("composer-error")).to_contain_text("big.txt is larger than 2 KB")
            expect(tab.get_by_test_id("pending-attachment")).to_have_count(1)
        with open_page(browser, off.server.url, "attachments-off") as tab:
            expect(tab.get_by_test_id("readiness")).to_have_text("Model ready")
            expect(tab.get_by_test_id("attach-button")).to_be_hidden()
    finally:
        narrow.server.stop()
        off.server.stop()


CHIP = """(chip) => {
  const box = (el) => el.getBoundingClientRect();
  const name = chip.querySelector('.chip-name'), size = chip.querySelector('.chip-size');
  const remove = chip.querySelector('[data-testid=remove-attachment]');
  const c = box(chip), n = box(name), s = box(size), r = box(remove), list = box(chip.parentElement);
  return { chip: [c.width, c.height], name: name.textContent, nameClipped: name.scrollWidth > name.clientWidth,
    size: size.textContent, sizeBox: [s.width, s.height], remove: [r.width, r.height],
    inOrder: n.right <= s.left + 0.5 && s.right <= r.left + 0.5,
    inside: [n, s, r].every((b) => b.left >= c.left - 0.5 && b.right <= c.right + 0.5) && c.right <= list.right + 0.5 };
}"""


@pytest.mark.parametrize("width", [1280, 375])
def test_a_file_waiting_to_be_sent_is_a_readable_chip_with_its_name_its_size_and_a_remove_button(page: Page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 740})
    name = "quarterly-figures-v2.csv"
    assert len(name) == 24
    page.get_by_test_id("attach-input").set_input_files({"name": name, "mimeType": "text/csv", "buffer": b"x" * 1536})
    chip = page.get_by_test_id("pending-attachment")
    expect(chip).to_have_count(1)
    seen = chip.evaluate(CHIP)
    assert seen["name"] == name and not seen["nameClipped"], seen  # the whole name, not "quarterly-fi…"
    assert seen["size"] == "1.5 KB" and seen["sizeBox"][0] > 20 and seen["sizeBox"][1] > 10, seen
    assert seen["chip"][1] >= 24 and seen["chip"][0] > 200, seen  # a chip, not an 18×8 px dot
    assert seen["remove"][0] >= 20 and seen["remove"][1] >= 20, seen  # × is a target a finger can hit
    assert seen["inOrder"] and seen["inside"], seen  # name, size, ×, in a row, none cut off by the chip or the box
    expect(chip.get_by_test_id("remove-attachment")).to_have_accessible_name(f"Remove {name}")
    page.screenshot(path=str(SHOTS / f"pending-chip-{width}.png"))


def test_a_400_kb_csv_is_searched_not_cut_and_the_page_says_so(page: Page, ollama: FakeOllama) -> None:
    """Issue 45, item 4: a file far past its share of the prompt reaches the model as its
    passages that best match the message, under a note, and the page tells the user."""
    rows = [f"town {i:05d},{1000 + i}" for i in range(25000)]
    rows[14321] = "Quimper,63283"
    big = ("town,people\n" + "\n".join(rows) + "\n").encode()
    assert len(big) > 400_000
    ollama.add({"text": "Quimper has 63283 people."})
    page.get_by_test_id("attach-input").set_input_files({"name": "towns.csv", "mimeType": "text/csv", "buffer": big})
    expect(page.get_by_test_id("pending-attachment")).to_have_count(1)
    page.get_by_test_id("message-input").fill("how many people live in Quimper?")
    page.get_by_test_id("send-button").click()
    expect(page.get_by_test_id("assistant-message").last).to_contain_text("Quimper has 63283 people.")
    drawn(page)
    sent = ollama.requests[-1]["messages"][-1]["content"]
    assert "[towns.csv was searched, not read whole:" in sent and "Quimper,63283" in sent
    assert "characters left out" not in sent and len(sent) < 40_000
    expect(page.get_by_test_id("searched-note")).to_contain_text("towns.csv")
    page.reload()
    expect(page.get_by_test_id("searched-note")).to_contain_text("too long for the model to read whole")
