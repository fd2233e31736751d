"""MODEL_MAX_TOKENS (issue 34 item 5): the limit is sent to the model server and enforced
while streaming; an answer that reaches it is stopped there, its text kept in the thread,
and the run ends with ANSWER_TOO_LONG."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from adapters.ollama.model import OllamaModel
from adapters.openai.model import OpenAIModel
from domain.model import AssistantMessage, UserMessage
from entrypoints.settings import SettingsError, load_settings
from ports.model import ModelPort, TextChunk
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.fake_openai import fake_openai
from tests.support.server import LiveServer, sse_events


async def answer(model: ModelPort) -> list[Any]:
    """The model's outputs, failing (not hanging) if the stream never ends."""

    async def read() -> list[Any]:
        return [o async for o in model.stream("sys", [UserMessage("hi")], [])]

    try:
        return await asyncio.wait_for(read(), 20)
    finally:
        await model.aclose()  # type: ignore[attr-defined]


def text_of(out: list[Any]) -> str:
    return "".join(o.text for o in out if isinstance(o, TextChunk))


async def test_ollama_is_sent_num_predict_and_an_endless_answer_is_cut_there() -> None:
    with fake_ollama([{"loop": "again ", "count": None}]) as fake:
        out = await answer(OllamaModel(fake.url, "qwen3", max_tokens=50))
        deadline = time.monotonic() + 10
        while not fake.dropped and time.monotonic() < deadline:  # the server saw the client go
            await asyncio.sleep(0.05)
        assert fake.dropped == 1
    assert fake.requests[0]["options"]["num_predict"] == 50
    reply = out[-1]
    assert isinstance(reply, AssistantMessage) and reply.cut
    assert text_of(out) == reply.content == "again " * 50


@pytest.mark.parametrize("mode", ["fast", "httpx"])
async def test_the_connection_of_a_cut_answer_is_never_reused(mode: str) -> None:
    with fake_ollama([{"loop": "again ", "count": None}, {"text": "a fresh answer"}]) as fake:
        model = OllamaModel(fake.url, "qwen3", max_tokens=10, transport=mode)
        first = [o async for o in model.stream("sys", [UserMessage("hi")], [])]
        second = await answer(model)
    assert isinstance(first[-1], AssistantMessage) and first[-1].cut
    assert isinstance(second[-1], AssistantMessage) and second[-1].content == "a fresh answer"
    assert fake.server is not None and fake.server.accepted == 2  # type: ignore[attr-defined]


async def test_an_openai_compatible_server_is_sent_max_tokens_and_an_endless_answer_is_cut_there() -> None:
    with fake_openai([{"loop": "again ", "count": None}]) as fake:
        out = await answer(OpenAIModel(fake.url, "local-model", max_tokens=30))
    assert fake.requests[0]["max_tokens"] == 30 and "max_completion_tokens" not in fake.requests[0]
    reply = out[-1]
    assert isinstance(reply, AssistantMessage) and reply.cut and reply.content == "again " * 30


@pytest.mark.parametrize("backend", ["ollama", "openai"])
async def test_a_server_that_stops_at_the_limit_itself_marks_the_answer_cut(backend: str) -> None:
    reply_script = [{"loop": "w ", "count": 100, "honour_limit": True}]
    if backend == "ollama":
        with fake_ollama(reply_script) as fake:
            out = await answer(OllamaModel(fake.url, "qwen3", max_tokens=20))
    else:
        with fake_openai(reply_script) as fake_oa:
            out = await answer(OpenAIModel(fake_oa.url, "local-model", max_tokens=20))
    reply = out[-1]
    assert isinstance(reply, AssistantMessage) and reply.cut and reply.content == "w " * 20


async def test_an_answer_within_the_limit_is_not_cut() -> None:
    with fake_ollama([{"text": "one two three"}, {"loop": "w ", "count": 20}]) as fake:
        model = OllamaModel(fake.url, "qwen3", max_tokens=20)
        short = [o async for o in model.stream("sys", [UserMessage("hi")], [])]
        exact = await answer(model)
    assert isinstance(short[-1], AssistantMessage) and not short[-1].cut
    assert isinstance(exact[-1], AssistantMessage) and not exact[-1].cut and exact[-1].content == "w " * 20


def chat(client: TestClient, body: dict[str, Any]) -> list[tuple[str | None, str, Any]]:
    with client.stream("POST", "/api/chat", json=body, headers={"Accept": "text/event-stream"}) as response:
        return list(sse_events(response))


def test_a_cut_answer_is_kept_in_the_thread_and_the_run_ends_answer_too_long(make_client: Any, ollama: FakeOllama) -> None:
    client = make_client(MODEL_MAX_TOKENS="40")
    ollama.add({"loop": "loop ", "count": None}, {"text": "a short answer"})
    got = chat(client, {"message": "say something"})
    tokens = [e[2] for e in got if e[1] == "token"]
    assert "".join(tokens) == "loop " * 40
    assert [e[2]["event"] for e in got if e[1] == "trace"][-2:] == ["cut", "leave"]
    end = got[-1]
    assert end[1] == "chat-error" and end[2]["code"] == "ANSWER_TOO_LONG" and "MODEL_MAX_TOKENS" in end[2]["message"]
    cid = end[2]["conversation"]
    detail = client.get(f"/api/conversations/{cid}").json()
    assert detail["messages"][-1] == {**detail["messages"][-1], "role": "assistant", "content": "loop " * 40, "cut": True}
    summary = detail["conversation"]
    assert summary["status"] == "failed" and summary["error"]["code"] == "ANSWER_TOO_LONG"
    assert detail["resumable"] is False
    # the conversation goes on from the kept text
    again = chat(client, {"message": "shorter please", "conversation": cid})
    assert again[-1][1] == "end" and again[-1][2]["status"] == "completed"
    sent = ollama.requests[-1]["messages"]
    assert [m["content"] for m in sent[-2:]] == ["loop " * 40, "shorter please"]
    assert "cut" not in client.get(f"/api/conversations/{cid}").json()["messages"][-1]


@pytest.mark.parametrize("value", ["-5", "many", "131073"])
def test_a_max_tokens_setting_that_cannot_work_is_a_clear_error(value: str, tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="MODEL_MAX_TOKENS must be"):
        load_settings({"CONFIG_DIR": str(tmp_path), "MODEL_MAX_TOKENS": value})


def test_the_default_limit_is_half_the_window_and_never_below_the_reserve(tmp_path: Path) -> None:
    # issue 35 item 1: a looping model filled a server's whole 8,192-token window (290 s)
    assert load_settings({"CONFIG_DIR": str(tmp_path)}).answer_limit == 4096
    assert load_settings({"CONFIG_DIR": str(tmp_path), "MODEL_CONTEXT": "32768", "MODEL_RESERVE": "16384"}).answer_limit == 16384
    assert load_settings({"CONFIG_DIR": str(tmp_path), "MODEL_CONTEXT": "1024"}).answer_limit == 512
    assert load_settings({"CONFIG_DIR": str(tmp_path), "MODEL_RESERVE": "0"}).answer_limit == 4096
    # set by hand, it is what it says (a thinking model may need more than the reserve)
    assert load_settings({"CONFIG_DIR": str(tmp_path), "MODEL_MAX_TOKENS": "8192"}).answer_limit == 8192


def test_the_default_limit_is_what_the_container_hands_the_model(tmp_path: Path) -> None:
    from entrypoints.container import create_container

    container = create_container({"CONFIG_DIR": str(tmp_path), "MODEL_BACKEND": "openai", "MODEL_CONTEXT": "2048"})
    assert container.model().max_tokens == 1024


def test_through_real_servers_an_endless_answer_stops_in_few_rows_and_another_process_replays_it_exactly(
    tmp_path: Path,
) -> None:
    with fake_ollama([{"loop": "again ", "count": None}]) as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none", MODEL_MAX_TOKENS="3000")
        owner, other = LiveServer(env, tmp_path), LiveServer(env, tmp_path)
        try:
            owner.start()
            other.start()
            got: list[tuple[str | None, str, Any]] = []
            with httpx.stream(
                "POST", f"{owner.url}/api/chat", json={"message": "go"}, headers={"Accept": "text/event-stream"}, timeout=30
            ) as response:
                run = response.headers["X-Run-Id"].replace("-", "")[:8]
                for event in sse_events(response):
                    got.append(event)
                    assert len(got) < 10_000, "the answer was not stopped"
            assert got[-1][1] == "chat-error" and got[-1][2]["code"] == "ANSWER_TOO_LONG"
            assert sum(1 for e in got if e[1] == "token") == 3000
            with sqlite3.connect(tmp_path / "db" / "sophos.db") as db:
                rows = db.execute("SELECT count(*) FROM run_events").fetchone()[0]
            assert rows < 300  # one row per flush of tokens, not one per token
            cid = got[-1][2]["conversation"]
            with httpx.stream(
                "GET", f"{other.url}/api/chat?conversation={cid}", headers={"Last-Event-ID": f"1234@{run}"}, timeout=30
            ) as response:
                replay = list(sse_events(response))
            assert replay == got[1234:]
        finally:
            owner.stop()
            other.stop()


def test_show_marks_a_cut_answer(tmp_path: Path) -> None:
    import subprocess

    from tests.support.app import SOPHOS, process_env

    with fake_ollama([{"loop": "again ", "count": None}]) as fake:
        env = process_env(app_env(tmp_path, fake.url, TOOLS_BACKEND="none", MODEL_MAX_TOKENS="5"))
        chat_run = subprocess.run([SOPHOS, "chat", "go"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    cid = chat_run.stderr.split("conversation: ")[1].split()[0]
    shown = subprocess.run([SOPHOS, "show", cid], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "again again again again again \n[stopped here: the answer reached MODEL_MAX_TOKENS]" in shown.stdout, shown.stdout
