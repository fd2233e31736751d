"""MCP servers for real: live sessions, annotations, reconnects, isolation, the shipped servers."""

from __future__ import annotations

import asyncio
import functools
import http.server
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.mcp.config import McpConfigError, load_mcp_config
from adapters.mcp.toolbox import McpToolbox
from domain.errors import ToolOutcomeUnknown
from tests.support.app import ROOT, SOPHOS, app_env, config_dir, ledger_server_entry, process_env
from tests.support.fake_ollama import fake_ollama
from tests.support.server import free_port


def ledger(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


async def test_annotations_are_kept_with_each_tool(tmp_path: Path) -> None:
    box = McpToolbox(config_dir(tmp_path, {"ledger": ledger_server_entry(tmp_path / "l.jsonl")}), tmp_path / "m.jsonl")
    try:
        tools = {t.name: t for t in await box.list_tools()}
        assert (tools["ledger__append"].destructive, tools["ledger__append"].idempotent) == (False, True)
        assert tools["ledger__charge"].unsafe_to_repeat
        assert tools["ledger__whoami"].read_only and not tools["ledger__whoami"].unsafe_to_repeat
        assert tools["ledger__fail"].destructive  # MCP's default when a server says nothing
    finally:
        await box.aclose()


async def test_one_live_session_serves_every_call_and_concurrent_calls(tmp_path: Path) -> None:
    book = tmp_path / "l.jsonl"
    box = McpToolbox(config_dir(tmp_path, {"ledger": ledger_server_entry(book)}), tmp_path / "m.jsonl")
    try:
        pids = {(await box.call("ledger__whoami", {}, "k")).content for _ in range(5)}
        assert len(pids) == 1
        outs = await asyncio.gather(*(box.call("ledger__append", {"label": str(i), "delay": 0.3}, f"k{i}") for i in range(5)))
        assert all(not o.is_error for o in outs)
        entries = ledger(book)
        first_done = min(e["t"] for e in entries if e["event"] == "done")
        assert sum(1 for e in entries if e["event"] == "start" and e["t"] < first_done) == 5  # all ran at once
    finally:
        await box.aclose()


async def test_a_killed_stdio_server_is_restarted_and_the_call_retried(tmp_path: Path) -> None:
    box = McpToolbox(config_dir(tmp_path, {"ledger": ledger_server_entry(tmp_path / "l.jsonl")}), tmp_path / "m.jsonl")
    try:
        pid = int((await box.call("ledger__whoami", {}, "k")).content)
        os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.2)
        again = await box.call("ledger__whoami", {}, "k")
        assert not again.is_error and int(again.content) != pid
        assert [s.extra["restarts"] for s in await box.status()] == [1]
    finally:
        await box.aclose()


def first_start(book: Path, key: str | None = None) -> dict[str, Any] | None:
    """The ledger's first `start` entry (for `key`, if given), if the server wrote one yet."""
    return next((e for e in ledger(book) if e["event"] == "start" and key in (None, e["key"])), None)


async def started(book: Path, key: str) -> dict[str, Any]:
    for _ in range(1500):
        entry = first_start(book, key)
        if entry is not None:
            return entry
        await asyncio.sleep(0.02)
    raise AssertionError(f"the call {key} never started")


async def test_a_destructive_call_cut_short_by_its_server_dying_is_not_sent_again(tmp_path: Path) -> None:
    book = tmp_path / "l.jsonl"
    box = McpToolbox(config_dir(tmp_path, {"ledger": ledger_server_entry(book)}), tmp_path / "m.jsonl")
    try:
        call = asyncio.create_task(box.call("ledger__charge", {"amount": 5, "delay": 3}, "pay-1"))
        os.kill((await started(book, "pay-1"))["pid"], signal.SIGKILL)
        with pytest.raises(ToolOutcomeUnknown, match="may or may not have taken effect"):
            await call
        assert [e["event"] for e in ledger(book) if e["key"] == "pay-1"] == ["start"]  # sent once, never finished
        assert not (await box.call("ledger__whoami", {}, "k")).is_error  # the next call restarts the server
    finally:
        await box.aclose()


async def test_an_idempotent_call_cut_short_by_its_server_dying_is_sent_again_and_succeeds(tmp_path: Path) -> None:
    book = tmp_path / "l.jsonl"
    box = McpToolbox(config_dir(tmp_path, {"ledger": ledger_server_entry(book)}), tmp_path / "m.jsonl")
    try:
        call = asyncio.create_task(box.call("ledger__append", {"label": "x", "delay": 1}, "add-1"))
        first = await started(book, "add-1")
        os.kill(first["pid"], signal.SIGKILL)
        outcome = await call
        assert not outcome.is_error and outcome.content == "appended x"
        entries = [e for e in ledger(book) if e["key"] == "add-1"]
        assert [e["event"] for e in entries] == ["start", "start", "done"] and entries[2]["pid"] != first["pid"]
    finally:
        await box.aclose()


async def test_a_destructive_call_to_a_server_that_already_died_is_sent_once_to_its_restart(tmp_path: Path) -> None:
    book = tmp_path / "l.jsonl"
    box = McpToolbox(config_dir(tmp_path, {"ledger": ledger_server_entry(book)}), tmp_path / "m.jsonl")
    try:
        pid = int((await box.call("ledger__whoami", {}, "k")).content)
        os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.5)  # the session sees its pipe close: the request is never written to it
        outcome = await box.call("ledger__charge", {"amount": 7}, "pay-2")
        assert not outcome.is_error and outcome.content == "charged 7"
        assert [(e["event"], e["pid"] != pid) for e in ledger(book) if e["key"] == "pay-2"] == [("start", True), ("done", True)]
    finally:
        await box.aclose()


@pytest.mark.slow
def test_a_run_whose_payment_is_cut_short_fails_with_an_unknown_outcome_and_waits_for_a_decision(tmp_path: Path) -> None:
    book = tmp_path / "l.jsonl"
    config_dir(tmp_path, {"ledger": ledger_server_entry(book)})
    replies = [{"tool_calls": [("ledger__charge", {"amount": 5, "delay": 3})]}, {"text": "paid"}, {"text": "skipped"}]
    with fake_ollama(replies) as fake:
        env = process_env(app_env(tmp_path, fake.url))

        def sophos(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([SOPHOS, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)

        chat = subprocess.Popen(
            [SOPHOS, "chat", "pay 5"], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            deadline, entry = time.monotonic() + 60, None
            while entry is None and time.monotonic() < deadline:
                time.sleep(0.02)
                entry = first_start(book)
            assert entry is not None, "the charge never started"
            os.kill(entry["pid"], signal.SIGKILL)
            _, err = chat.communicate(timeout=60)
        finally:
            if chat.poll() is None:
                chat.kill()
        assert chat.returncode != 0
        assert "error: TOOL_OUTCOME_UNKNOWN:" in err, err
        match = re.search(r"conversation: (\S+)", err)
        assert match is not None, err
        cid = match.group(1)

        detail = json.loads(sophos("show", cid, "--json").stdout)
        assert detail["conversation"]["status"] == "failed"
        assert detail["conversation"]["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"
        assert detail["decisionRequired"] and detail["pendingToolCalls"][0]["outcomeUnknown"]
        blind = sophos("resume", cid)
        assert blind.returncode == 4 and "DECISION_REQUIRED" in blind.stderr, blind.stderr
        skip = sophos("resume", cid, "--decision", "skip")
        assert skip.returncode == 0, skip.stderr
    assert [e["event"] for e in ledger(book)] == ["start"]  # charged at most once, never twice


async def test_a_restarted_http_server_is_reconnected(tmp_path: Path) -> None:
    port, book = free_port(), tmp_path / "l.jsonl"
    cmd = [sys.executable, "-m", "tests.support.ledger_server", str(book), "--http", str(port)]

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(cmd, env=process_env({}), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30  # listening, however long the imports take
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return proc
            time.sleep(0.05)
        raise AssertionError("the ledger server did not start listening")

    proc = start()
    box = McpToolbox(config_dir(tmp_path, {"ledger": {"url": f"http://127.0.0.1:{port}/mcp"}}), tmp_path / "m.jsonl")
    try:
        first = (await box.call("ledger__whoami", {}, "k")).content
        proc.kill()
        proc.wait()
        proc = start()
        second = await box.call("ledger__whoami", {}, "k")
        assert not second.is_error and second.content != first
    finally:
        await box.aclose()
        proc.kill()
        proc.wait()


async def test_a_server_that_cannot_start_is_left_out_and_retried_after_a_config_fix(tmp_path: Path) -> None:
    book = tmp_path / "l.jsonl"
    servers = {"ledger": ledger_server_entry(book), "broken": {"command": str(tmp_path / "missing-binary"), "args": []}}
    cfg = config_dir(tmp_path, servers)
    box = McpToolbox(cfg, tmp_path / "m.jsonl", retry_after=0)
    try:
        names = {t.name for t in await box.list_tools()}
        assert "ledger__append" in names and not any(n.startswith("broken__") for n in names)
        status = {s.name: s for s in await box.status()}
        assert status["ledger"].ok and not status["broken"].ok and status["broken"].error
        assert not (await box.call("ledger__append", {"label": "x"}, "k")).is_error
        servers["broken"] = ledger_server_entry(tmp_path / "other.jsonl")  # mcp.json is fixed
        (cfg / "mcp.json").write_text(json.dumps(servers))
        deadline = time.monotonic() + 60  # retried in the background, never waited for
        while "broken__append" not in {t.name for t in await box.list_tools()}:
            assert time.monotonic() < deadline, "the fixed server was never started"
            await asyncio.sleep(0.1)
    finally:
        await box.aclose()


def test_a_malformed_config_names_the_file_and_the_entry(tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    cfg.mkdir()
    for text, needle in [
        ("{not json", "Failed to load MCP configuration from"),
        ("[]", "must map server names to objects"),
    ]:
        (cfg / "mcp.json").write_text(text)
        with pytest.raises(McpConfigError, match=needle) as info:
            load_mcp_config(cfg, tmp_path / "m.jsonl")
        assert str(cfg / "mcp.json") in str(info.value)
    for entry, needle in [
        (3, "server 'fetch': must be an object"),
        ({"args": []}, "server 'fetch': needs either command"),
        ({"command": "x", "args": "no"}, "server 'fetch': args must be a list"),
        ({"url": "ftp://x"}, "server .fetch.: url must be an http\\(s\\) URL"),
    ]:
        (cfg / "mcp.json").write_text(json.dumps({"fetch": entry, "good": {"command": "x"}}))
        config = load_mcp_config(cfg, tmp_path / "m.jsonl")
        assert list(config.servers) == ["good"]  # one bad entry disables that server only
        assert re.search(needle, config.errors["fetch"]) and str(cfg / "mcp.json") in config.errors["fetch"]


def test_the_memory_placeholder_becomes_an_absolute_path_with_its_directory(tmp_path: Path) -> None:
    cfg = config_dir(tmp_path, {"memory": {"command": "node", "args": [], "env": {"MEMORY_FILE_PATH": "${MEMORY_FILE_PATH}"}}})
    os.chdir(tmp_path)
    conn = load_mcp_config(cfg, Path("rel/dir/memory.jsonl")).servers["memory"]
    assert conn["env"]["MEMORY_FILE_PATH"] == str(tmp_path / "rel" / "dir" / "memory.jsonl")
    assert (tmp_path / "rel" / "dir").is_dir()


@pytest.fixture
def web_page(tmp_path: Path) -> Iterator[str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "page.html").write_text("<html><body><h1>Local page</h1><p>The secret word is pelican.</p></body></html>")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/page.html"
    httpd.shutdown()


async def test_the_shipped_fetch_server_fetches_a_page_when_private_addresses_are_allowed(tmp_path: Path, web_page: str) -> None:
    shipped = json.loads((ROOT / "config" / "mcp.json").read_text())["fetch"]
    allowed = {**shipped, "args": [*shipped["args"], "--ignore-robots-txt", "--allow-private-ips"]}
    box = McpToolbox(config_dir(tmp_path, {"fetch": allowed}), tmp_path / "m.jsonl")
    try:
        out = await box.call("fetch__fetch", {"url": web_page}, "k")
        assert not out.is_error and "pelican" in out.content
    finally:
        await box.aclose()
    safe = McpToolbox(config_dir(tmp_path, {"fetch": shipped}), tmp_path / "m.jsonl")
    try:  # the shipped flags keep loopback refused
        out = await safe.call("fetch__fetch", {"url": web_page}, "k")
        assert out.is_error and "pelican" not in out.content
    finally:
        await safe.aclose()


def test_remembering_with_the_shipped_config_writes_the_memory_file(tmp_path: Path) -> None:
    entity = {"name": "user", "entityType": "person", "observations": ["favourite colour is green"]}
    replies = [{"tool_calls": [("memory__create_entities", {"entities": [entity]})]}, {"text": "I will remember that."}]
    with fake_ollama(replies) as fake:
        # the default policy: creating memories is not destructive, so it runs unasked; the
        # shared file is the Memory server's (MEMORY_BACKEND=mcp-file: a one-person server)
        env = app_env(tmp_path, fake.url, CONFIG_DIR=str(ROOT / "config"), TOOL_APPROVAL="unsafe", MEMORY_BACKEND="mcp-file")
        run = subprocess.run(
            [SOPHOS, "chat", "remember that my favourite colour is green"],
            env=process_env(env),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode == 0, run.stderr
    assert "memory__create_entities" in run.stderr
    memory = Path(env["MEMORY_FILE_PATH"]).read_text()
    assert "favourite colour is green" in memory
    offered = {t["function"]["name"] for t in fake.requests[0]["tools"]}
    assert {"memory__create_entities", "memory__read_graph", "fetch__fetch"} <= offered


def test_a_run_survives_its_tool_server_being_killed_between_two_calls(tmp_path: Path) -> None:
    book = tmp_path / "l.jsonl"
    config_dir(tmp_path, {"ledger": ledger_server_entry(book)})

    def kill_ledger_server() -> None:
        for pid in {e["pid"] for e in ledger(book)}:
            os.kill(pid, signal.SIGKILL)

    replies = [
        {"tool_calls": [("ledger__append", {"label": "first"})]},
        {"tool_calls": [("ledger__append", {"label": "second"})], "before": kill_ledger_server},
        {"text": "both done"},
    ]
    with fake_ollama(replies) as fake:
        env = app_env(tmp_path, fake.url)
        run = subprocess.run(
            [SOPHOS, "chat", "two calls"], env=process_env(env), cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
    assert run.returncode == 0, run.stderr
    assert "both done" in run.stdout
    done = [e for e in ledger(book) if e["event"] == "done"]
    assert [e["label"] for e in done] == ["first", "second"] and done[0]["pid"] != done[1]["pid"]


async def test_approve_and_auto_approve_globs_reach_each_tool_and_a_bad_list_disables_its_server(tmp_path: Path) -> None:
    entry = {**ledger_server_entry(tmp_path / "l.jsonl"), "approve": ["app*"], "autoApprove": ["*"]}
    box = McpToolbox(config_dir(tmp_path, {"ledger": entry}), tmp_path / "m.jsonl")
    try:
        tools = {t.name: t for t in await box.list_tools()}
        assert (tools["ledger__charge"].approve, tools["ledger__charge"].auto_approve) == (("app*",), ("*",))
    finally:
        await box.aclose()
    (tmp_path / "config" / "mcp.json").write_text(json.dumps({"ledger": {**entry, "autoApprove": "*"}}))
    config = load_mcp_config(tmp_path / "config", tmp_path / "m.jsonl")
    assert "autoApprove must be a list of tool name globs" in config.errors["ledger"]


async def test_a_destructive_call_past_its_servers_timeout_is_an_unknown_outcome_not_a_failure(tmp_path: Path) -> None:
    book = tmp_path / "l.jsonl"
    entry = {**ledger_server_entry(book), "timeout": 0.5}  # mcp.json's per-server timeout beats the default
    box = McpToolbox(config_dir(tmp_path, {"ledger": entry}), tmp_path / "m.jsonl", call_timeout=120)
    try:
        with pytest.raises(ToolOutcomeUnknown, match="did not answer within 0.5 s, so it may or may not"):
            await box.call("ledger__charge", {"amount": 5, "delay": 2}, "pay-slow")
        # a call safe to repeat that times out is a plain failure the model may retry
        late = await box.call("ledger__append", {"label": "x", "delay": 2}, "add-slow")
        assert late.is_error and "did not answer within 0.5 s" in late.content
    finally:
        await box.aclose()


def test_a_run_whose_payment_outlives_tool_timeout_waits_for_a_decision(tmp_path: Path) -> None:
    book = tmp_path / "l.jsonl"
    config_dir(tmp_path, {"ledger": ledger_server_entry(book)})
    replies = [{"tool_calls": [("ledger__charge", {"amount": 5, "delay": 3})]}, {"text": "paid"}]
    with fake_ollama(replies) as fake:
        env = process_env(app_env(tmp_path, fake.url, TOOL_TIMEOUT="1"))
        chat = subprocess.run([SOPHOS, "chat", "pay 5"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert chat.returncode != 0 and "error: TOOL_OUTCOME_UNKNOWN:" in chat.stderr, chat.stderr
        cid = re.search(r"conversation: (\S+)", chat.stderr).group(1)  # type: ignore[union-attr]
        shown = subprocess.run(
            [SOPHOS, "show", cid, "--json"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        detail = json.loads(shown.stdout)
        assert detail["decisionRequired"] and detail["pendingToolCalls"][0]["outcomeUnknown"]
        assert len(fake.requests) == 1  # the model was never told the charge failed
    assert [e["event"] for e in ledger(book) if e["event"] == "start"] == ["start"]


def test_a_per_server_timeout_must_be_a_positive_number(tmp_path: Path) -> None:
    entry = {**ledger_server_entry(tmp_path / "l.jsonl"), "timeout": "soon"}
    config = load_mcp_config(
        config_dir(tmp_path, {"ledger": entry, "ok": ledger_server_entry(tmp_path / "k.jsonl")}), tmp_path / "m.jsonl"
    )
    assert list(config.servers) == ["ok"] and "timeout must be a number of seconds" in config.errors["ledger"]


async def test_the_shipped_config_asks_before_the_memory_is_deleted_and_never_before_it_is_read(tmp_path: Path) -> None:
    """Memory's delete tools are annotated idempotent, which "unsafe" alone would let run: text
    injected into a fetched page could wipe the memory graph unasked."""
    from domain.approvals import ApprovalMode, needs_approval

    box = McpToolbox(ROOT / "config", tmp_path / "m.jsonl")
    try:
        tools = {t.name: t for t in await box.list_tools()}
    finally:
        await box.aclose()
    asked = {name for name, spec in tools.items() if needs_approval(ApprovalMode.UNSAFE, spec, ())}
    assert asked == {"memory__delete_entities", "memory__delete_observations", "memory__delete_relations"}
    assert not any(
        needs_approval(ApprovalMode.ALL, tools[n], ())
        for n in ("memory__read_graph", "memory__search_nodes", "memory__open_nodes", "fetch__fetch")
    )


def bulky_entry() -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": ["-m", "tests.support.bulky_server"],
        "env": {"PYTHONPATH": f"{ROOT}:{ROOT / 'src'}"},
    }


async def test_big_tool_results_are_cut_or_refused_and_never_stall_the_session(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from adapters.mcp.stdio import MAX_LINE
    from adapters.mcp.toolbox import MAX_RESULT

    box = McpToolbox(config_dir(tmp_path, {"bulky": bulky_entry()}), tmp_path / "m.jsonl", call_timeout=60)
    try:
        cut = await box.call("bulky__big", {"size": 4 * MAX_RESULT}, "k1")
        assert not cut.is_error and cut.content.startswith("x" * MAX_RESULT + "\n[… cut: the tool returned 4,194,304")
        # mcp's own transport took 15 s for 20 MiB and never delivered 100 MiB
        refused = await box.call("bulky__big", {"size": MAX_LINE + 4 * 2**20}, "k2")
        assert refused.is_error and "over the 16 MiB limit" in refused.content, refused.content[:200]
        again = await box.call("bulky__big", {"size": 3}, "k3")  # the session goes on
        assert (again.is_error, again.content) == (False, "xxx")
        caplog.set_level(logging.INFO, logger="adapters.mcp.stdio")
        loud = await box.call("bulky__noisy", {"size": 64 * 2**20}, "k4")  # stderr without a newline
        assert loud.content == "said a lot"
    finally:
        await box.aclose()
    for _ in range(100):  # the line ends when the server exits: its rest is counted, never held
        if any("more bytes of that line not logged" in r.getMessage() for r in caplog.records):
            break
        await asyncio.sleep(0.1)
    logged = [r.getMessage() for r in caplog.records if r.name == "adapters.mcp.stdio"]
    assert f"MCP server bulky: ({64 * 2**20 - 8192} more bytes of that line not logged)" in logged
    assert max(map(len, logged)) < 9000  # the line's start, cut to 8 KiB
