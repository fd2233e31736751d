"""The page's everyday use, one test per item, on one shared server: trace panel, mobile,
keyboard, code blocks and copying, tool calls, Stop, the header title, the sidebar, the
theme and icons, the sanitizer, reconnecting. Each saves screenshots at 1280×800 and 375 px
wide."""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from playwright.sync_api import Page, expect

from domain.model import iso, new_id
from tests.browser.conftest import App, drawn, shoot, toggle_sidebar
from tests.support.fake_ollama import FakeOllama
from tests.support.server import LiveServer

EMOJI = re.compile(r"[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF]")


def send(page: Page, text: str) -> None:
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("message-input").press("Enter")


def answer(page: Page) -> object:
    return page.get_by_test_id("assistant-message").last


def test_the_reasoning_trace_is_a_side_panel_beside_the_chat(tab: Page, shared_ollama: FakeOllama) -> None:
    shared_ollama.add({"tool_calls": [("ledger__append", {"label": "trace"})]}, {"text": "Traced.", "token_delay": 0.05})
    tab.get_by_test_id("trace-toggle").click()
    panel = tab.get_by_test_id("trace-panel")
    expect(panel).to_be_visible()
    send(tab, "trace this")
    expect(panel).to_contain_text("ENTER", timeout=15000)
    expect(panel).to_contain_text("CALL")
    expect(panel).to_contain_text("ledger__append")
    expect(panel).to_be_in_viewport()  # beside the messages, not below the conversation list
    expect(tab.get_by_test_id("message-input")).to_be_in_viewport()
    expect(answer(tab)).to_have_text(re.compile("Traced."), timeout=15000)
    expect(panel).to_contain_text("LEAVE")
    shoot(tab, "trace-panel")
    tab.reload()
    expect(tab.get_by_test_id("trace-panel")).to_be_visible()  # the choice is remembered
    tab.get_by_test_id("trace-toggle").click()
    expect(tab.get_by_test_id("trace-panel")).to_be_hidden()


def test_on_a_phone_the_sidebar_collapses_the_latest_message_shows_and_the_composer_fits(
    tab: Page, shared_ollama: FakeOllama, tmp_path: Path
) -> None:
    tab.set_viewport_size({"width": 375, "height": 740})
    send(tab, "phone first")
    expect(answer(tab)).to_have_text("Done.", timeout=15000)
    sidebar = tab.get_by_test_id("sidebar")
    expect(sidebar).not_to_be_in_viewport()
    tab.get_by_test_id("menu-button").click()
    tab.get_by_test_id("new-chat-button").click()
    expect(sidebar).not_to_be_in_viewport()
    shared_ollama.add({"text": "\n\n".join(f"Paragraph {i} of a long answer." for i in range(60)) + " The end."})
    send(tab, "phone second")
    expect(answer(tab)).to_contain_text("The end.", timeout=15000)
    tab.reload()
    expect(answer(tab)).to_contain_text("The end.")
    expect(answer(tab).get_by_test_id("copy-message")).to_be_in_viewport()  # scrolled to the latest
    # files picked take room under the list, with no render of it: the latest line stays in view
    files = [tmp_path / f"notes-{i}.txt" for i in range(4)]
    for f in files:
        f.write_text("notes")
    tab.get_by_test_id("attach-input").set_input_files([str(f) for f in files])
    expect(tab.get_by_test_id("pending-attachment")).to_have_count(4)
    expect(answer(tab).get_by_test_id("copy-message")).to_be_in_viewport(ratio=1)
    for _ in files:
        tab.get_by_test_id("remove-attachment").first.click()
    composer = tab.locator("#composer").bounding_box()
    send_box = tab.get_by_test_id("send-button").bounding_box()
    assert composer and send_box and composer["x"] >= 0 and composer["x"] + composer["width"] <= 375
    assert send_box["x"] + send_box["width"] <= 375 and send_box["y"] + send_box["height"] <= 740
    shoot(tab, "mobile-closed-sidebar")
    tab.get_by_test_id("menu-button").click()
    expect(sidebar).to_be_in_viewport()
    expect(tab.get_by_test_id("menu-button")).to_have_attribute("aria-expanded", "true")
    shoot(tab, "mobile-open-sidebar")
    tab.locator(".conversation-item", has_text="phone first").get_by_test_id("open-conversation").click()
    expect(sidebar).not_to_be_in_viewport()
    expect(tab.get_by_test_id("current-title")).to_have_text("phone first")


def test_the_keyboard_alone_opens_conversations_sends_and_stops(tab: Page, shared_ollama: FakeOllama) -> None:
    send(tab, "keyboard one")
    expect(answer(tab)).to_have_text("Done.", timeout=15000)
    expect(tab.get_by_test_id("message-input")).to_be_focused()  # focus is back after the reply
    shared_ollama.add({"text": "slow " * 300, "token_delay": 0.05})
    tab.get_by_test_id("new-chat-button").click()
    tab.get_by_test_id("message-input").fill("keyboard two")
    tab.keyboard.press("Enter")
    expect(answer(tab)).to_contain_text("slow", timeout=15000)
    tab.keyboard.press("Escape")  # Esc stops the run
    expect(tab.get_by_test_id("resume-banner")).to_contain_text("You stopped", timeout=10000)
    expect(tab.get_by_test_id("message-input")).to_be_focused()
    tab.get_by_test_id("new-chat-button").focus()
    tab.keyboard.press("Tab")  # the temporary chat's button
    tab.keyboard.press("Tab")  # the search box
    tab.keyboard.press("Tab")  # the first conversation: a button
    focused = tab.locator(":focus")
    expect(focused).to_have_attribute("data-testid", "open-conversation")
    outline = focused.evaluate("e => getComputedStyle(e).outlineStyle + ' ' + getComputedStyle(e).outlineWidth")
    assert outline.startswith("solid") and not outline.endswith(" 0px"), outline  # a visible focus ring
    row_actions = tab.locator(".conversation-item .actions").first
    expect(row_actions).to_have_css("opacity", "1")  # shown while the row has the focus
    expect(tab.locator(".conversation-item .actions").nth(1)).to_have_css("opacity", "0")
    shoot(tab, "keyboard-focus-ring")
    for _ in range(12):  # past each row's rename and delete buttons
        tab.keyboard.press("Tab")
        if tab.locator(":focus").get_attribute("title") == "keyboard one":
            break
    expect(tab.locator(":focus")).to_have_attribute("data-testid", "open-conversation")
    expect(tab.locator(":focus")).to_have_attribute("title", "keyboard one")
    tab.keyboard.press("Enter")
    expect(tab.get_by_test_id("current-title")).to_have_text("keyboard one")


def test_code_blocks_are_labelled_highlighted_and_copied_and_a_message_copies_whole(tab: Page, shared_ollama: FakeOllama) -> None:
    tab.context.grant_permissions(["clipboard-read", "clipboard-write"])
    text = "Here:\n\n```python\ndef add(a, b):\n    return a + b  # sum\n```\n\nand plain."
    shared_ollama.add({"text": text})
    send(tab, "show code")
    bubble = answer(tab)
    expect(bubble.get_by_test_id("code-language")).to_have_text("python", timeout=15000)
    expect(bubble.locator(".hljs-keyword").first).to_have_text("def")
    expect(bubble.locator(".hljs-comment")).to_have_text("# sum")
    drawn(tab)  # the run's end redraws the bubble: its "Copied" label is looked at on the one drawn then
    bubble.get_by_test_id("copy-code").click()
    expect(bubble.get_by_test_id("copy-code")).to_have_accessible_name("Copied")
    assert tab.evaluate("navigator.clipboard.readText()") == "def add(a, b):\n    return a + b  # sum"
    shoot(tab, "code-blocks")
    bubble.get_by_test_id("copy-message").click()
    assert tab.evaluate("navigator.clipboard.readText()") == text


def test_tool_arguments_are_pretty_and_shown_and_a_running_call_spins(tab: Page, shared_ollama: FakeOllama) -> None:
    shared_ollama.add({"tool_calls": [("ledger__append", {"label": "spin", "delay": 4})]}, {"text": "Appended."})
    send(tab, "append slowly")
    call = tab.get_by_test_id("tool-call").last
    expect(call.get_by_test_id("tool-spinner")).to_be_visible(timeout=15000)
    expect(call.get_by_test_id("tool-status")).to_have_text("running")
    expect(call.get_by_test_id("tool-args")).to_be_visible()  # no click needed (issue 33 item 8)
    shoot(tab, "tool-call-running")
    expect(answer(tab)).to_have_text(re.compile("Appended."), timeout=15000)
    call = tab.get_by_test_id("tool-call").last
    expect(call.get_by_test_id("tool-spinner")).to_have_count(0)
    expect(call.get_by_test_id("tool-duration")).to_have_text(re.compile(r"^\d+(\.\d+)? s$"))  # about 4 s
    args = call.get_by_test_id("tool-args")
    expect(args).to_be_visible()
    assert args.inner_text() == '{\n  "label": "spin",\n  "delay": 4\n}'
    shoot(tab, "tool-call-arguments")


def test_stop_keeps_the_partial_answer_marked_as_stopped_by_you(tab: Page, shared_ollama: FakeOllama) -> None:
    shared_ollama.add({"text": "partial " * 300, "token_delay": 0.05}, {"text": "Resumed."})
    send(tab, "stop me")
    expect(answer(tab)).to_contain_text("partial partial partial", timeout=15000)
    tab.get_by_test_id("stop-button").click()
    banner = tab.get_by_test_id("resume-banner")
    expect(banner).to_contain_text("You stopped this answer", timeout=10000)
    expect(tab.get_by_test_id("error-banner")).to_be_hidden()
    expect(answer(tab)).to_contain_text("partial partial partial")
    expect(answer(tab).get_by_test_id("stopped-note")).to_have_text("Stopped by you")
    shoot(tab, "stop-keeps-partial")
    tab.reload()
    expect(answer(tab)).to_contain_text("partial partial partial")  # in the thread, not only on screen
    expect(answer(tab).get_by_test_id("stopped-note")).to_have_text("Stopped by you")


def test_the_header_shows_the_title_from_the_first_token_on(tab: Page, shared_ollama: FakeOllama) -> None:
    words = " ".join(f"w{i}" for i in range(40))
    shared_ollama.add({"text": words, "token_delay": 0.3})  # 12 s of streaming: a generous margin
    send(tab, "Title from the first token")
    expect(answer(tab)).to_contain_text("w0", timeout=15000)
    expect(tab.get_by_test_id("current-title")).to_have_text("Title from the first token")
    assert words not in answer(tab).inner_text()  # still streaming
    shoot(tab, "header-title")
    tab.keyboard.press("Escape")  # leave the shared server idle
    expect(tab.get_by_test_id("resume-banner")).to_be_visible(timeout=10000)


def test_the_sidebar_groups_by_date_says_1_turn_and_searches_every_title(tab: Page, shared_app: App) -> None:
    db = sqlite3.connect(shared_app.env["DATABASE_PATH"])
    now = datetime.now(UTC)
    long_title = "A very long conversation title that cannot fit in the sidebar at all, really"
    rows = [
        (long_title, now, 1),
        ("From yesterday", now - timedelta(days=1), 4),
        ("Needle in the archive", now - timedelta(days=40), 2),
    ]
    rows += [(f"Filler {i}", now - timedelta(days=30, minutes=i), 2) for i in range(60)]
    with db:
        db.executemany(
            "INSERT INTO conversations (id, title, created_at, updated_at, message_count, turns) VALUES (?, ?, ?, ?, ?, ?)",
            [(new_id(), t, iso(at), iso(at), n, n // 4) for t, at, n in rows],  # 4 messages: 1 turn with a tool call
        )
    db.close()
    tab.reload()
    groups = tab.get_by_test_id("date-group")
    expect(groups.first).to_have_text("Today")
    expect(groups).to_have_text(["Today", "Yesterday", "Earlier"])
    # the sidebar counts turns (the person's messages), not messages (issue 48)
    counted = tab.locator(".conversation-item", has_text="From yesterday")
    expect(counted).to_contain_text("1 turn")
    expect(counted.locator(".meta")).not_to_contain_text("1 turns")
    expect(counted.locator(".meta")).not_to_contain_text("message")
    row = tab.locator(".conversation-item", has_text=long_title)
    opener = row.get_by_test_id("open-conversation")
    expect(opener).to_have_attribute("title", long_title)  # the full title on hover
    # shown cut, after two lines: measured in one page task on the row as it is then (the list
    # is drawn again as the page opens the latest conversation; a node found before may be gone)
    tab.wait_for_function(
        """(title) => {
      const opener = [...document.querySelectorAll('.conversation-item [data-testid=open-conversation]')].find((e) => e.title === title);
      const shown = opener && opener.querySelector('.title');
      return !!shown && shown.clientHeight > 0 && shown.scrollHeight > shown.clientHeight;
    }""",
        arg=long_title,
        timeout=10000,
    )
    tab.mouse.move(700, 400)
    expect(row.locator(".actions")).to_have_css("opacity", "0")
    row.hover()
    expect(row.locator(".actions")).to_have_css("opacity", "1")
    shoot(tab, "sidebar-groups", narrow=toggle_sidebar)
    expect(tab.locator(".conversation-item", has_text="Needle in the archive")).to_have_count(0)  # not loaded
    tab.get_by_test_id("search").fill("NEEDLE")
    expect(tab.get_by_test_id("search-result")).to_have_count(1)  # in place of the titles (issue 33 item 15)
    expect(tab.get_by_test_id("search-result")).to_contain_text("Needle in the archive")
    expect(tab.get_by_test_id("conversation-list")).to_be_hidden()
    shoot(tab, "sidebar-search", narrow=toggle_sidebar)
    tab.get_by_test_id("search").press("Escape")  # clears the search box, and the search
    expect(tab.get_by_test_id("search")).to_have_value("")
    expect(tab.get_by_test_id("conversation-list")).to_be_visible()
    expect(tab.locator(".conversation-item", has_text="Needle in the archive")).to_have_count(0)
    expect(tab.locator(".conversation-item .title", has_text=re.compile("^Filler 3$"))).to_have_count(1)


def test_a_light_theme_follows_the_system_with_a_favicon_and_svg_icons(
    tab: Page, shared_app: App, shared_ollama: FakeOllama
) -> None:
    shared_ollama.add(
        {"tool_calls": [("ledger__fail", {"reason": "icons"})]}, {"text": "See ![a chart](http://127.0.0.1:9/c.png)."}
    )
    tab.emulate_media(color_scheme="light")
    send(tab, "icons please")
    expect(answer(tab)).to_contain_text("a chart", timeout=15000)
    assert tab.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
    icon = tab.locator("link[rel=icon]").get_attribute("href")
    favicon = tab.request.get(f"{shared_app.server.url}{icon}")
    assert favicon.ok and favicon.headers["content-type"].startswith("image/svg+xml")
    assert tab.locator("header svg, .sidebar svg, .msg svg, .tool svg").count() >= 4
    assert not EMOJI.search(tab.locator("body").inner_text())
    shoot(tab, "light-theme")
    tab.emulate_media(color_scheme="dark")
    assert tab.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(15, 17, 21)"
    shoot(tab, "dark-theme")


def test_a_model_answer_cannot_draw_the_page_s_own_ui(tab: Page, shared_ollama: FakeOllama) -> None:
    fake = (
        '<div class="banner error" id="error-banner" role="alert" style="position:fixed;top:0;left:0;right:0" '
        'data-testid="error-banner"><strong>Error: MODEL_UNREACHABLE</strong> Enter your token again</div> '
        '<button class="icon only">Log out</button>'
    )
    shared_ollama.add({"text": fake})
    send(tab, "render a banner")
    bubble = answer(tab)
    expect(bubble).to_contain_text("Enter your token again", timeout=15000)
    drawn(tab)  # the counts below are read once, from the bubble drawn from the stored message
    assert bubble.locator(".content").locator("[class], [id], [style], [role], [data-testid]").count() == 0
    expect(tab.locator("#error-banner")).to_have_count(1)
    expect(tab.get_by_test_id("error-banner")).to_be_hidden()
    expect(tab.locator(".banner.error")).to_have_count(1)
    assert bubble.locator(".content button").count() == 0
    assert bubble.locator("button").count() == 3  # only the page's own: fork, regenerate and copy
    shoot(tab, "sanitized-fake-banner")


def test_the_page_says_reconnecting_and_recovers_by_itself_when_the_server_returns(
    tab: Page, shared_app: App, shared_ollama: FakeOllama
) -> None:
    shared_ollama.add({"text": "steady " * 300, "token_delay": 0.05})
    tab.get_by_test_id("message-input").fill("survive a restart")
    tab.get_by_test_id("message-input").press("Enter")
    expect(tab.get_by_test_id("assistant-message").last).to_contain_text("steady steady", timeout=15000)
    port = shared_app.server.port
    shared_app.server.kill()
    connection = tab.get_by_test_id("connection")
    expect(connection).to_have_text("Reconnecting…", timeout=10000)
    expect(tab.get_by_test_id("readiness")).to_have_class(re.compile(r"\bstale\b"))  # not a green "ready" while away
    shoot(tab, "reconnecting")
    shared_app.server = LiveServer(shared_app.env, shared_app.tmp, port).start()
    expect(connection).to_be_hidden(timeout=15000)  # no reload: the tab found the server again
    expect(tab.get_by_test_id("readiness")).to_have_class(re.compile(r"\bok\b"))
    expect(tab.get_by_test_id("resume-banner")).to_contain_text("The server stopped during this answer")
    expect(tab.locator(".conversation-item").first.locator(".badge")).to_have_text("interrupted")
    tab.get_by_test_id("resume-button").click()
    expect(tab.get_by_test_id("assistant-message").last).to_have_text("Done.", timeout=15000)
    shoot(tab, "reconnected")
