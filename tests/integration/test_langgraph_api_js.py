"""LangGraph's official JS SDK (`@langchain/langgraph-sdk` 1.x, pinned in
tests/support/lgjs/package-lock.json) against a real `sophos serve`, from a Node script:
threads, a streamed run in three modes, state, history, search, a joined background run,
an approval answered with a Command (run once; the same answer again refused), cancel, and a
message enqueued behind a running run (multitask_strategy enqueue)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_langgraph_api import Sophos, charges, sophos

LGJS = Path(__file__).resolve().parents[1] / "support" / "lgjs"


def installed() -> bool:
    """The SDK under tests/support/lgjs/node_modules: `npm ci` from the lock file when missing."""
    if (LGJS / "node_modules" / "@langchain" / "langgraph-sdk").is_dir():
        return True
    npm = shutil.which("npm")
    if npm is None:
        return False
    done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=LGJS, capture_output=True, timeout=300)
    return done.returncode == 0


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None or not installed():
        pytest.skip("node and npm (or the npm registry) are needed for the JS SDK")
    return found


def test_the_js_sdk_drives_threads_runs_interrupts_and_cancel(node: str, tmp_path: Path) -> None:
    s: Sophos
    with sophos(tmp_path) as s:
        done = subprocess.run([node, "check.mjs", s.lg_url], cwd=LGJS, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout.strip().splitlines()[-1])
        book = s.book
    assert out["created"] == {"status": "idle", "suite": "js"}
    assert out["events"][0] == "metadata" and out["events"][-1] == "end"
    assert {"values", "messages", "updates"} <= set(out["events"])
    assert out["tokens"] == "You said 'hello js', and I agree."
    assert out["state"] == [["human", "hello js"], ["ai", out["tokens"]]]
    history = out["history"]
    assert history[0][0] == 2 and all(h[1] == older[2] for h, older in zip(history, history[1:], strict=False))
    assert out["thread"] in out["found"]
    assert out["joined"] == "tick " * 60 and out["runStatus"] == "success"
    assert out["interrupt"]["action_requests"][0]["args"] == {"amount": 4}
    assert out["pausedStatus"] == "interrupted"
    assert out["afterResume"].startswith("done:")
    assert out["staleStatus"] == 409
    assert len(charges(book, f"{out['paidThread']}:")) == 1
    assert out["cancelled"] == "interrupted"
    assert out["afterDelete"] == 404
    assert out["queuedStatus"] == "pending" and out["queuedRuns"] == ["success", "success"]
    assert out["queuedAnswer"][0] == "slow first" and out["queuedAnswer"][2:] == [
        "queued second",
        "You said 'queued second', and I agree.",
    ]
