"""LangChain's Agent Chat UI (create-agent-chat-app 0.1.6's Vite form, built by
scripts/agent-chat-ui into a cache outside the tree) in Debian's Chromium against a real
`sophos serve` on its LangGraph API port: a message sent and its answer streamed in, the
thread in the UI's history after a reload, and a tool call shown with its result."""

from __future__ import annotations

import contextlib
import functools
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import open_page
from tests.integration.test_langgraph_api import Sophos, charges, sophos
from tests.support.app import ROOT
from tests.support.server import free_port

BUILD = ROOT / "scripts" / "agent-chat-ui"
# CORS origins need a login (issue 42): the UI sends this as X-Api-Key, as set in its form
KEY = "agent-chat-ui-key"


ASKED: dict[str, int] = {}  # how often the model was asked each text


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """ "append": a tool call, then "done: <its result>"; "slow": a long answer, a token
    every 50 ms; "count": "answer <n>", n counting the times it was asked; anything else
    is echoed."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return {"text": f"done: {last['content'][:40]}"}
    text = last["content"]
    ASKED[text] = ASKED.get(text, 0) + 1
    if "append" in text:
        return {"tool_calls": [("ledger__append", {"label": "from-the-ui"})]}
    if "charge" in text:
        return {"tool_calls": [("ledger__charge", {"amount": 7})]}
    if "slow" in text:
        return {"loop": "tick ", "count": 80, "token_delay": 0.05}
    if "count" in text:
        return {"text": f"answer {ASKED[text]}"}
    return {"text": f"You said {text!r}, and I agree with every word of it.", "token_delay": 0.02}


@pytest.fixture(scope="module")
def dist() -> Path:
    """The built UI: built here on the first run (npm ci + vite build, ~1 min), then cached."""
    done = subprocess.run([str(BUILD), "build"], capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return Path(done.stdout.strip().splitlines()[-1])


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass


@dataclass
class ChatUi:
    url: str
    lg: Sophos

    def open_url(self, **query: str) -> str:
        return f"{self.url}/?{urlencode({'apiUrl': self.lg.lg_url, 'assistantId': 'agent', **query})}"

    @property
    def keyed(self) -> dict[str, Any]:
        """A browser context whose UI holds the API key (where its setup form stores it)."""
        stored = [{"name": "lg:chat:apiKey", "value": KEY}]
        return {"storage_state": {"cookies": [], "origins": [{"origin": self.url, "localStorage": stored}]}}

    def detail(self, tid: str) -> Any:
        return self.lg.server.get(f"/api/conversations/{tid}", headers={"Authorization": f"Bearer {KEY}"}).json()


@pytest.fixture(scope="module")
def static(dist: Path) -> Iterator[str]:
    """The built UI's files on a free port: its origin."""
    port = free_port()
    httpd = ThreadingHTTPServer(("127.0.0.1", port), functools.partial(_Quiet, directory=str(dist)))
    serving = threading.Thread(target=httpd.serve_forever, daemon=True)
    serving.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextlib.contextmanager
def chat_ui(origin: str, tmp: Path, approval: str) -> Iterator[ChatUi]:
    with sophos(tmp, TOOL_APPROVAL=approval, LANGGRAPH_API_CORS_ORIGINS=origin, API_TOKEN=KEY) as s:
        s.fake.responder = answer
        yield ChatUi(origin, s)


@pytest.fixture(scope="module")
def ui(static: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatUi]:
    with chat_ui(static, tmp_path_factory.mktemp("agentchat"), "off") as u:
        yield u


def send(page: Page, text: str) -> None:
    """Type and send `text` once the UI takes it: while a run's stream is still open the UI
    ignores Enter (its Send button is a Cancel button until then)."""
    page.get_by_placeholder("Type your message...").fill(text)
    button = page.get_by_role("button", name="Send", exact=True)
    expect(button).to_be_enabled(timeout=20_000)
    button.click()


def test_a_message_streams_its_answer_and_the_thread_is_in_the_history_after_a_reload(browser: Browser, ui: ChatUi) -> None:
    with open_page(browser, ui.open_url(), "agent-chat-ui-send", **ui.keyed) as page:
        send(page, "hello from the chat ui")
        said = "You said 'hello from the chat ui', and I agree with every word of it."
        expect(page.get_by_text(said)).to_be_visible(timeout=20_000)
        expect(page.get_by_text("hello from the chat ui", exact=True)).to_be_visible()
        page.wait_for_url("**threadId=*", timeout=10_000)
        tid = page.url.split("threadId=")[1].split("&")[0]
        # the same thread through Sophos's own API: one store, two doors
        detail = ui.detail(tid)
        assert [m["content"] for m in detail["messages"]] == ["hello from the chat ui", said]
        page.reload()
        expect(page.get_by_text(said)).to_be_visible(timeout=20_000)
        # the history panel lists the thread by its first message
        page.goto(ui.open_url(chatHistoryOpen="true"))
        expect(page.get_by_role("button", name="hello from the chat ui")).to_be_visible(timeout=20_000)


def test_a_tool_call_is_shown_with_its_arguments_and_the_answer_after_it(browser: Browser, ui: ChatUi) -> None:
    with open_page(browser, ui.open_url(), "agent-chat-ui-tool", **ui.keyed) as page:
        send(page, "append a line please")
        expect(page.get_by_text("done:")).to_be_visible(timeout=20_000)
        expect(page.get_by_text("ledger__append").first).to_be_visible()
        expect(page.get_by_text("from-the-ui").first).to_be_visible()
        expect(page.get_by_text("appended from-the-ui", exact=True)).to_be_visible()  # the tool's result
        starts = [json.loads(x) for x in ui.lg.book.read_text().splitlines()]
        assert [e["event"] for e in starts if e.get("label") == "from-the-ui"].count("start") == 1


def test_regenerate_makes_a_branch_and_the_switcher_goes_back_to_the_first_answer(browser: Browser, ui: ChatUi) -> None:
    with open_page(browser, ui.open_url(), "agent-chat-ui-branches", **ui.keyed) as page:
        send(page, "count for me")
        expect(page.get_by_text("answer 1", exact=True)).to_be_visible(timeout=20_000)
        page.get_by_text("answer 1", exact=True).hover()
        page.get_by_role("button", name="Refresh").click()
        expect(page.get_by_text("answer 2", exact=True)).to_be_visible(timeout=20_000)
        expect(page.get_by_text("answer 1", exact=True)).to_have_count(0)
        expect(page.get_by_text("2 / 2")).to_be_attached()
        page.get_by_text("answer 2", exact=True).hover()
        page.get_by_text("2 / 2").locator("xpath=preceding-sibling::button").click()
        expect(page.get_by_text("answer 1", exact=True)).to_be_visible(timeout=10_000)
        expect(page.get_by_text("1 / 2")).to_be_attached()


def test_a_reload_mid_stream_leaves_the_run_going_and_the_answer_whole(browser: Browser, ui: ChatUi) -> None:
    """useStream asks `on_disconnect: cancel`; Sophos keeps the run (it is durable), so a
    reload during the answer loses nothing: the run ends `success` and the answer is whole."""
    with open_page(browser, ui.open_url(), "agent-chat-ui-reload", **ui.keyed) as page:
        send(page, "slow please")
        page.wait_for_url("**threadId=*", timeout=10_000)
        tid = page.url.split("threadId=")[1].split("&")[0]
        deadline = time.monotonic() + 10
        while not ui.lg.client().runs.list(tid):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        page.reload()
        run = ui.lg.client().runs.list(tid)[0]
        assert run["status"] in ("pending", "running")  # the reload did not cancel it
        values: Any = ui.lg.client().runs.join(tid, run["run_id"])
        assert values["messages"][-1]["content"] == "tick " * 80
        assert ui.lg.client().runs.get(tid, run["run_id"])["status"] == "success"
        page.reload()
        expect(page.get_by_text(("tick " * 80).strip())).to_be_visible(timeout=20_000)


def test_a_call_waiting_for_approval_is_accepted_or_ignored_in_the_ui_s_inbox_and_runs_at_most_once(
    browser: Browser, static: str, tmp_path: Path
) -> None:
    """This version of the UI renders the older Agent Inbox shape, which Sophos's interrupt
    also carries for a single call: Accept runs the call once, Ignore rejects it (it never
    runs), and the thread goes on."""
    with chat_ui(static, tmp_path, "unsafe") as u, open_page(browser, u.open_url(), "agent-chat-ui-approval", **u.keyed) as page:
        send(page, "charge me please")
        page.get_by_role("button", name="Accept", exact=True).click(timeout=20_000)
        expect(page.get_by_text("done: charged 7")).to_be_visible(timeout=20_000)
        tid = page.url.split("threadId=")[1].split("&")[0]
        assert len(charges(u.lg.book, f"{tid}:")) == 1
        assert u.lg.client().threads.get(tid)["status"] == "idle"
        send(page, "charge me once more")
        page.get_by_role("button", name="Ignore", exact=True).click(timeout=20_000)
        expect(page.get_by_text("done:").nth(1)).to_be_visible(timeout=20_000)
        assert len(charges(u.lg.book, f"{tid}:")) == 1  # the ignored call never ran
        detail = u.detail(tid)
        assert [m["role"] for m in detail["messages"]][-3:] == ["assistant", "tool", "assistant"]


def test_an_amount_edited_in_the_inbox_runs_once_with_the_new_value_and_a_response_runs_nothing(
    browser: Browser, static: str, tmp_path: Path
) -> None:
    """The inbox's Edit/Accept form sends every field back as text ("12"); the charge's
    schema wants an integer, which the LangGraph API reads it as. Its "Respond to assistant"
    rejects the call with that message: the model gets it, the call never runs."""
    with chat_ui(static, tmp_path, "unsafe") as u, open_page(browser, u.open_url(), "agent-chat-ui-edit", **u.keyed) as page:
        send(page, "charge me please")
        amount = page.locator("xpath=//p[normalize-space()='Amount']/following::*[self::textarea or self::input][1]")
        expect(amount).to_have_value("7", timeout=20_000)
        amount.fill("12")
        page.get_by_role("button", name="Submit", exact=True).click()  # Accept becomes Submit once a field is edited
        expect(page.get_by_text("done: Note: the user edited")).to_be_visible(timeout=20_000)
        tid = page.url.split("threadId=")[1].split("&")[0]
        assert [e["label"] for e in charges(u.lg.book, f"{tid}:")] == ["charge-12"]
        send(page, "charge me once more")
        page.get_by_placeholder("Your response here...").fill("not this month", timeout=20_000)
        page.get_by_role("button", name="Send Response", exact=True).click()
        expect(page.get_by_text("done: Rejected")).to_be_visible(timeout=20_000)
        told = [m["content"] for m in u.lg.fake.requests[-1]["messages"] if m["role"] == "tool"]
        assert told[-1].endswith("Reason: not this month"), told
        assert len(charges(u.lg.book, f"{tid}:")) == 1  # the call answered with a response never ran
