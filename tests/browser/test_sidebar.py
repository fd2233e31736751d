"""The sidebar (issue 33 item 16): wider, resizable (drag or arrow keys, remembered), titles
on two lines; rename and delete are covered in test_web_page.py."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.conftest import drawn, shoot, toggle_sidebar
from tests.support.fake_ollama import FakeOllama

LONG = "Planning a three-week walking trip through the Scottish Highlands in late spring"


def test_the_sidebar_is_wider_resizable_and_shows_titles_on_two_lines(tab: Page, shared_ollama: FakeOllama) -> None:
    tab.evaluate("localStorage.removeItem('sophos.sidebarWidth')")
    tab.reload()
    tab.get_by_test_id("message-input").fill(LONG)
    tab.get_by_test_id("message-input").press("Enter")
    expect(tab.get_by_test_id("assistant-message").last).to_have_text("Done.", timeout=15000)
    sidebar = tab.get_by_test_id("sidebar")
    box = sidebar.bounding_box()
    assert box is not None and box["width"] >= 300, box  # was 256 px
    # the run's end redraws the list (the title comes from the message): measure the row it leaves
    drawn(tab)
    title = tab.locator(".conversation-item .title").first
    expect(title).to_contain_text("Planning a three-week")
    line, height = tab.evaluate("""() => {
      const e = document.querySelector('.conversation-item .title');
      return [parseFloat(getComputedStyle(e).lineHeight), e.getBoundingClientRect().height];
    }""")  # one task: a locator's evaluate resolves the node first and may then meet a detached one
    assert 1.5 * line < height < 2.5 * line, (height, line)  # two lines, not cut at one
    shoot(tab, "sidebar-two-line-titles", toggle_sidebar)
    handle = tab.get_by_test_id("sidebar-resize")
    grip = handle.bounding_box()
    assert grip is not None
    tab.mouse.move(grip["x"] + 2, grip["y"] + 200)
    tab.mouse.down()
    tab.mouse.move(grip["x"] + 150, grip["y"] + 200, steps=5)
    tab.mouse.up()
    wider = sidebar.bounding_box()
    assert wider is not None and wider["width"] > box["width"] + 100, wider
    handle.focus()
    for _ in range(3):
        tab.keyboard.press("ArrowLeft")
    narrower = sidebar.bounding_box()
    assert narrower is not None and abs(narrower["width"] - (wider["width"] - 48)) < 2, narrower
    tab.reload()
    kept = tab.get_by_test_id("sidebar").bounding_box()
    assert kept is not None and abs(kept["width"] - narrower["width"]) < 2  # remembered
    expect(tab.get_by_test_id("sidebar-resize")).to_be_visible()
    shoot(tab, "sidebar-resized")
    tab.evaluate("localStorage.removeItem('sophos.sidebarWidth')")
