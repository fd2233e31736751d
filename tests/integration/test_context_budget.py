"""The context budget through a real `sophos serve`, a real MCP server and the fake Ollama
(which records each request and counts its prompt tokens its own way)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from domain.attachments import parse_upload
from domain.commands import start_command
from tests.support.app import SOPHOS, app_env, config_dir, ledger_server_entry, process_env
from tests.support.fake_ollama import FakeOllama, fake_ollama, prompt_tokens
from tests.support.server import LiveServer, sse_events, stream

SYSTEM = "You are a test assistant with a ledger."
WINDOW, RESERVE = 2048, 512
WORDS = "the quick brown fox jumps over the lazy dog " * 5  # ~225 characters


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with fake_ollama() as fake:
        yield fake


@pytest.fixture
def servers() -> Iterator[list[LiveServer]]:
    started: list[LiveServer] = []
    yield started
    for server in started:
        server.stop()


def launch(servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama, **settings: Any) -> LiveServer:
    if not (tmp_path / "config").exists():
        config_dir(tmp_path, {"ledger": ledger_server_entry(tmp_path / "ledger.jsonl")}, system=SYSTEM)
    env = app_env(tmp_path, ollama.url, MODEL_CONTEXT=WINDOW, MODEL_RESERVE=RESERVE, **settings)
    server = LiveServer(env, tmp_path).start()
    servers.append(server)
    return server


def turn(server: LiveServer, text: str, cid: str | None) -> tuple[str, list[tuple[str | None, str, Any]]]:
    r = server.post("/api/chat", {"message": text, **({"conversation": cid} if cid else {})})
    assert r.status_code == 200, r.text
    cid = r.json()["conversation"]
    events = stream(server, cid)
    assert events[-1][1] == "end" and events[-1][2]["status"] == "completed", events[-1]
    return cid, events


def tool_then_text(body: dict[str, Any]) -> dict[str, Any]:
    """A tool call for a user message, a short answer after the tool's result."""
    last = body["messages"][-1]
    if last["role"] == "user":
        return {"tool_calls": [("ledger__append", {"label": last["content"][:12]})]}
    return {"text": f"Noted. {WORDS}"}


def assert_wire_pairs_whole(messages: list[dict[str, Any]]) -> None:
    """On Ollama's wire tool results carry no ids: an assistant turn with N calls must be
    followed by exactly N tool messages, and a tool message must follow one."""
    i = 0
    while i < len(messages):
        m = messages[i]
        if m["role"] == "tool":
            raise AssertionError(f"tool result {i} sent without its call")
        calls = len(m.get("tool_calls") or [])
        if calls:
            following = messages[i + 1 : i + 1 + calls]
            assert [x["role"] for x in following] == ["tool"] * calls, f"call {i} sent without its results"
            i += calls
        i += 1


@pytest.mark.timeout(600)  # 60 turns through a real server: slow on a loaded machine
@pytest.mark.slow
def test_a_60_turn_conversation_stays_within_a_2048_token_context(
    servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama
) -> None:
    server = launch(servers, tmp_path, ollama)
    ollama.responder = tool_then_text
    cid = None
    for i in range(60):
        ollama.latency = 1.0 if i == 59 else 0.0  # the last run's stream is read live
        cid, events = turn(server, f"turn {i:02d} {WORDS}", cid)
    assert cid is not None
    requests = ollama.requests
    assert len(requests) == 120
    tool_names = {t["function"]["name"] for t in requests[0]["tools"]}
    assert {"ledger__append", "ledger__report"} <= tool_names
    for n, body in enumerate(requests):
        assert body["options"]["num_ctx"] == WINDOW
        assert prompt_tokens(body) <= WINDOW - RESERVE, f"request {n}: {prompt_tokens(body)} tokens"
        assert body["messages"][0] == {"role": "system", "content": SYSTEM}
        assert {t["function"]["name"] for t in body["tools"]} == tool_names
        users = [m for m in body["messages"] if m["role"] == "user"]
        assert users[-1]["content"].startswith(f"turn {n // 2:02d} ")
        assert_wire_pairs_whole(body["messages"][1:])
    assert len(requests[-1]["messages"]) < 60  # the beginning was left out ...
    detail = server.get(f"/api/conversations/{cid}").json()
    assert len(detail["messages"]) == 240  # ... of what was sent, never of the thread
    assert detail["messages"][0]["content"].startswith("turn 00 ")
    context = detail["context"]
    assert 200 < context["sentFrom"] < 240 and context["budget"] == WINDOW - RESERVE
    assert 0 < context["tokens"] <= context["budget"]
    notes = [e[2]["data"] for e in events if e[1] == "trace" and e[2]["event"] == "context"]
    assert len(notes) == 2 and notes[-1]["leftOut"] == notes[-1]["sentFrom"] > 200
    assert notes[-1]["sent"] == len(requests[-1]["messages"]) - 1 and notes[-1]["budget"] == WINDOW - RESERVE
    md = server.get(f"/api/conversations/{cid}/export").text
    assert "turn 00 " in md and "turn 59 " in md and "The model no longer sees the messages above" in md
    show = subprocess.run([SOPHOS, "show", cid], env=process_env(server.env), capture_output=True, text=True, check=True)
    assert "--- the model no longer sees the messages above" in show.stdout and "turn 00 " in show.stdout


def test_a_40kb_tool_result_is_shortened_in_the_request_but_whole_in_the_thread(
    servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama
) -> None:
    server = launch(servers, tmp_path, ollama)
    ollama.latency = 1.0  # the run's stream is read live (attached while the model is asked)
    ollama.add({"tool_calls": [("ledger__report", {"size": 40_000})]}, {"text": "It is long."})
    cid, events = turn(server, "read the report", None)
    sent = [m for m in ollama.requests[1]["messages"] if m["role"] == "tool"]
    assert len(sent) == 1
    assert sent[0]["content"].startswith("BEGIN") and sent[0]["content"].endswith("END")
    assert "characters left out here" in sent[0]["content"] and len(sent[0]["content"]) < 3000
    assert prompt_tokens(ollama.requests[1]) <= WINDOW - RESERVE
    stored = [m for m in server.get(f"/api/conversations/{cid}").json()["messages"] if m["role"] == "tool"]
    assert len(stored[0]["content"]) >= 40_000 and "left out" not in stored[0]["content"]
    notes = [e[2]["data"] for e in events if e[1] == "trace" and e[2]["event"] == "context"]
    assert notes[-1]["shortened"] == 1
    assert stored[0]["content"] in server.get(f"/api/conversations/{cid}/export").text


def test_a_prompt_the_server_cut_is_logged_and_streamed_as_a_warning(
    servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama
) -> None:
    server = launch(servers, tmp_path, ollama, TOOLS_BACKEND="none")
    ollama.window = 600  # a server that ignores num_ctx and runs with less
    cid, first = turn(server, "short " + "a" * 1200, None)
    assert not [e for e in first if e[1] == "trace" and e[2]["event"] == "truncated"]
    ollama.latency = 1.0  # the run's stream is read live (attached while the model is asked)
    _, events = turn(server, "long " + "b" * 3000, cid)
    warnings = [e[2]["data"] for e in events if e[1] == "trace" and e[2]["event"] == "truncated"]
    assert len(warnings) == 1 and warnings[0]["evaluated"] == 600 and warnings[0]["sent"] > 800
    assert "far fewer prompt tokens (600)" in warnings[0]["message"] and "may have cut the prompt" in warnings[0]["message"]
    log = server.log.read_text()
    assert "may have cut the prompt" in log and cid in log


def test_a_server_that_counts_words_is_said_as_seen_once_per_conversation(make_client: Any, ollama: FakeOllama) -> None:
    # issue 35 item 6: behind an Ollama-protocol proxy that reports word counts, every turn
    # said "the server cut the prompt, raise MODEL_CONTEXT", which was wrong advice
    client = make_client()
    ollama.count_words = True
    cid = None
    warnings = []
    for i in range(3):
        body: dict[str, Any] = {"message": f"turn {i}: " + "lorem-ipsum-dolor " * 40}
        if cid:
            body["conversation"] = cid
        with client.stream("POST", "/api/chat", json=body, headers={"Accept": "text/event-stream"}) as response:
            events = list(sse_events(response))
        assert events[-1][1] == "end", events[-1]
        cid = events[-1][2]["conversation"]
        warnings += [e[2]["data"] for e in events if e[1] == "trace" and e[2]["event"] == "truncated"]
    assert len(warnings) == 1
    assert "far fewer prompt tokens" in warnings[0]["message"] and "raise MODEL_CONTEXT" not in warnings[0]["message"]


SUMMARY_ASK = "You summarize the earlier part"


def summarizing(body: dict[str, Any]) -> dict[str, Any]:
    system = body["messages"][0]["content"]
    if system.startswith(SUMMARY_ASK):
        assert "tools" not in body or not body["tools"]
        return {"text": f"SUMMARY covering {body['messages'][1]['content'].count('User:')} user messages."}
    return {"text": f"Answer. {WORDS}"}


@pytest.mark.timeout(300)  # two server starts
def test_summaries_are_written_once_stored_and_reused_after_a_restart(
    servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama
) -> None:
    server = launch(servers, tmp_path, ollama, CONTEXT_SUMMARY="true", TOOLS_BACKEND="none")
    ollama.responder = summarizing
    cid = None
    for i in range(8):
        cid, events = turn(server, f"turn {i} {WORDS * 2}", cid)
    assert cid is not None
    asks = [b for b in ollama.requests if b["messages"][0]["content"].startswith(SUMMARY_ASK)]
    detail = server.get(f"/api/conversations/{cid}").json()
    summaries = [m for m in detail["messages"] if m["role"] == "summary"]
    assert len(asks) == len(summaries) >= 1  # each written once, each stored
    latest = summaries[-1]
    answers = [b for b in ollama.requests if not b["messages"][0]["content"].startswith(SUMMARY_ASK)]
    assert latest["content"] in answers[-1]["messages"][0]["content"]
    assert answers[-1]["messages"][0]["content"].startswith(SYSTEM)
    assert all(prompt_tokens(b) <= WINDOW - RESERVE for b in ollama.requests)
    assert detail["context"]["sentFrom"] >= latest["covers"]
    server.stop()
    ollama.requests.clear()
    server = launch(servers, tmp_path, ollama, CONTEXT_SUMMARY="true", TOOLS_BACKEND="none")
    turn(server, "after the restart", cid)
    assert not [b for b in ollama.requests if b["messages"][0]["content"].startswith(SUMMARY_ASK)]
    assert latest["content"] in ollama.requests[0]["messages"][0]["content"]  # reused, not rewritten
    md = server.get(f"/api/conversations/{cid}/export").text
    assert f"## Summary of the first {latest['covers']} messages" in md and latest["content"] in md
    jsonl = [json.loads(x) for x in server.get(f"/api/conversations/{cid}/export?format=jsonl").text.splitlines()]
    assert any((c["last_message"] or {}).get("role") == "summary" for c in jsonl)
    show = subprocess.run([SOPHOS, "show", cid], env=process_env(server.env), capture_output=True, text=True, check=True)
    assert "[summary of the first" in show.stdout and latest["content"] in show.stdout


def test_the_cli_prints_one_line_when_messages_are_left_out(tmp_path: Path, ollama: FakeOllama) -> None:
    env = process_env(app_env(tmp_path, ollama.url, TOOLS_BACKEND="none", MODEL_CONTEXT="1024", MODEL_RESERVE="256"))

    def chat(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([SOPHOS, "chat", *args], env=env, capture_output=True, text=True, timeout=60, check=True)

    first = chat("1 " + "x" * 2000)
    assert "context:" not in first.stderr  # everything fitted: nothing to say
    cid = first.stderr.split("conversation: ")[1].split()[0]
    second = chat("-c", cid, "2 " + "y" * 2000)
    notices = [line for line in second.stderr.splitlines() if line.startswith("context:")]
    assert notices == [notices[0]] and "the model sees the last 2 messages" in notices[0]
    assert notices[0].endswith("of 768 tokens); 1 left out")
    shown = json.loads(
        subprocess.run([SOPHOS, "show", cid, "--json"], env=env, capture_output=True, text=True, check=True).stdout
    )
    assert shown["context"] == {"sentFrom": 1, "tokens": shown["context"]["tokens"], "budget": 768}
    assert len(shown["messages"]) == 4


async def test_model_context_is_the_budget_of_an_openai_compatible_server_too(tmp_path: Path) -> None:
    from entrypoints.container import close_container, create_container
    from tests.support.fake_openai import fake_openai

    with fake_openai() as oai:
        container = create_container(
            app_env(
                tmp_path,
                TOOLS_BACKEND="none",
                MODEL_BACKEND="openai",
                OPENAI_BASE_URL=oai.url,
                MODEL_CONTEXT="1024",
                MODEL_RESERVE="256",
            )
        )
        service = container.run_service()
        cid = None
        for text in ("one " + "x" * 2000, "two " + "y" * 2000):
            started = await service.start(start_command(text, cid))
            cid = started.conversation_id
            active = service.hub.get(cid)
            if active is not None:  # else it has already finished
                await active.finished.wait()
        sent = [m["content"] for m in oai.requests[1]["messages"]]
        assert sent[0] == "You are a test." and sent[-1].startswith("two ")
        assert not any(str(c).startswith("one ") for c in sent)  # left out: it no longer fits
        assert len((await container.conversations().get(cid)).messages) == 4  # the thread keeps it
        await close_container(container)


async def test_llama_cpps_slot_window_is_the_budget_not_its_training_length(tmp_path: Path) -> None:
    """Issue 45, item 4: llama-server lists the model's training length (32,768) but a request
    gets one slot's window (`/props` n_ctx, 2,048): with MODEL_CONTEXT unset, an 11.7 KB file
    is planned for 2,048 tokens (searched), not sent whole into a 400."""
    from entrypoints.container import close_container, create_container
    from tests.support.fake_openai import fake_openai

    with fake_openai([{"text": "It fits."}]) as oai:
        oai.trained, oai.slot_window = 32768, 2048
        container = create_container(app_env(tmp_path, TOOLS_BACKEND="none", MODEL_BACKEND="openai", OPENAI_BASE_URL=oai.url))
        listed = await container.model().models()
        assert [m.context for m in listed] == [2048]
        oai.slot_window = None  # another server: /props is not found, the listed length stands
        assert [m.context for m in await container.model().models()] == [32768]
        oai.slot_window = 2048
        text = "\n".join(f"entry {i:04d} of the ledger, nothing to see" for i in range(280))
        assert 11_000 < len(text) < 12_500
        service = container.run_service()
        started = await service.start(
            start_command("what does entry 0123 say?", None, files=(parse_upload("ledger.txt", "text/plain", text.encode()),))
        )
        active = service.hub.get(started.conversation_id)
        if active is not None:
            await active.finished.wait()
        sent = oai.requests[-1]["messages"][-1]["content"]
        assert "ledger.txt was searched, not read whole" in sent and "entry 0123 of the ledger" in sent
        assert prompt_tokens(oai.requests[-1]) <= 2048
        await close_container(container)
