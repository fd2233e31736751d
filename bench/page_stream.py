"""Streaming on the page in a long chat (issue 33 item 12): the time Debian's Chromium takes
to show the same answer, streamed by a real `sophos serve` from the fake Ollama, in an empty
chat and at the end of a 500-message conversation. The page re-renders only the streaming
bubble per token, so the long chat may cost at most 1.2x the empty one (it was 3.4x at 200
messages when every token rebuilt the whole list).

A run is timed in the page, from the frame in which the bubble shows the answer's first word
to the one that shows its last (the target), and from the click on Send (the first word also
waits on the server, which reads the longer thread first: shown, not the target); the median
of --page-reps runs of each, alternating, so a machine that slows down weighs on both.
Usage: python -m bench --only page [--page-messages 500] [--page-reps 5]
       python -m bench.page_stream (the same, results written as the `page` section)"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support.app import app_env, config_dir
from tests.support.fake_ollama import fake_ollama
from tests.support.harness import make_harness
from tests.support.server import LiveServer

from bench.table import RESULTS, Row, print_table, recording

RATIO = 1.2
CHROMIUM = "/usr/bin/chromium"
WORDS = 400
TOKEN_DELAY = 0.004  # seconds between tokens: each one gets a frame of its own, as from a model
BODY = " ".join(f"word{i}" for i in range(WORDS - 1))
# the thread's past answers: Markdown with a code block, as answers are
PAST = "Some **bold** text, a [link](https://example.org) and a list:\n\n- one\n- two\n\n```python\nprint({i})\n```"

# resolves once the last bubble shows the answer's last word (`end`, unique per run), with
# the times (ms after the click) of its first word (`begin`) and of its last
TIMED_SEND = """async ([text, begin, end]) => {
  const input = document.getElementById("input");
  input.value = text;
  input.dispatchEvent(new Event("input"));
  const start = performance.now();
  document.getElementById("send").click();
  let first = null;
  return await new Promise((resolve) => {
    const check = () => {
      const last = document.getElementById("messages").lastElementChild;  // the streaming bubble (O(1): no walk of the list)
      const text = last ? last.textContent : "";
      if (first === null && text.includes(begin)) first = performance.now() - start;
      if (text.includes(end)) resolve([first, performance.now() - start]);
      else requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
  });
}"""


async def seed(db: Path, messages: int) -> str:
    """A conversation of `messages` messages written through the real use case and saver."""
    from adapters.sqlite.runs import SqliteRunStore
    from adapters.sqlite.saver import ThreadedSqliteSaver

    turns = messages // 2
    repo = SqliteRunStore(str(db))
    saver = ThreadedSqliteSaver.open(str(db), keep=3)
    h = make_harness([PAST.format(i=i) for i in range(turns)], repo=repo, saver=saver)
    cid: str | None = None
    for i in range(turns):
        started, _ = await h.send(f"question {i}", cid)
        cid = started.conversation_id
    await repo.aclose()
    saver.close()
    assert cid is not None
    return cid


Timing = tuple[float, float]  # ms to the first word, ms to the last


def measure(url: str, long_cid: str, messages: int, reps: int, ollama: Any) -> tuple[list[Timing], list[Timing]]:
    from playwright.sync_api import sync_playwright

    empty: list[Timing] = []
    long: list[Timing] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
        page.set_default_timeout(120_000)
        page.goto(url)
        for rep in range(reps + 1):  # the first round warms up (JIT, caches) and is not counted
            for kind in ("empty", "long"):
                if kind == "empty":
                    page.get_by_test_id("new-chat-button").click()
                else:
                    page.get_by_test_id(f"conversation-{long_cid}").get_by_test_id("open-conversation").click()
                    page.wait_for_function(f"() => document.querySelectorAll('#messages > .msg').length >= {messages}")
                page.get_by_test_id("empty-state" if kind == "empty" else "assistant-message").first.wait_for()
                begin, end = f"BEGIN-{kind}-{rep}", f"END-{kind}-{rep}"
                ollama.add({"text": f"{begin} {BODY} {end}", "token_delay": TOKEN_DELAY})
                first, last = page.evaluate(TIMED_SEND, [f"{kind} {rep}", begin, end])
                ms = (float(first), float(last))
                page.wait_for_function("() => document.getElementById('responding').hidden")
                if rep:
                    (empty if kind == "empty" else long).append(ms)
        browser.close()
    return empty, long


async def section(args: argparse.Namespace) -> None:
    messages, reps = args.page_messages, args.page_reps
    with tempfile.TemporaryDirectory(prefix="sophos-bench-page-") as tmp, fake_ollama() as ollama:
        root = Path(tmp)
        config_dir(root)
        env = app_env(root, ollama.url, TOOLS_BACKEND="none")
        db = Path(env["DATABASE_PATH"])
        db.parent.mkdir(parents=True, exist_ok=True)
        cid = await seed(db, messages)
        server = LiveServer(env, root).start()
        try:
            empty, long = await asyncio.to_thread(measure, server.url, cid, messages, reps, ollama)
        finally:
            server.stop()

    def med(runs: list[Timing], part: int) -> float:
        return statistics.median(r[1] - r[0] if part == 2 else r[part] for r in runs)

    e, g = med(empty, 2), med(long, 2)
    print(
        f"The same {WORDS}-word answer streamed on the page (Chromium), one token each {TOKEN_DELAY * 1000:g} ms, "
        f"median of {reps}. Streaming: from its first word on screen to its last; the first word waits on the "
        "server, which reads the longer thread first."
    )
    for name, runs in (("empty", empty), (f"{messages} messages", long)):
        print(f"  runs, ms (first word, last word): {name} " + ", ".join(f"{a:.0f}/{b:.0f}" for a, b in runs))
    rows: list[Row] = [
        ("streaming, first word to last", f"{e:.0f} ms", f"{g:.0f} ms", f"<= {RATIO}x", g <= RATIO * e),
        ("ratio", "1.00x", f"{g / e:.2f}x", f"<= {RATIO}x", g <= RATIO * e),
        ("click to first word", f"{med(empty, 0):.0f} ms", f"{med(long, 0):.0f} ms", "measured", True),
        ("click to last word", f"{med(empty, 1):.0f} ms", f"{med(long, 1):.0f} ms", "measured", True),
    ]
    print_table(("figure", "empty chat", f"{messages} messages", "target"), rows)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--page-messages", type=int, default=500, help="messages of the long chat (bench page)")
    parser.add_argument("--page-reps", type=int, default=5, help="timed runs of each case (bench page)")


def main() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    with recording("page", datetime.now(UTC), {"messages": str(args.page_messages), "reps": str(args.page_reps)}, args.results):
        asyncio.run(section(args))


if __name__ == "__main__":
    main()
