"""A model and a system prompt per conversation, and the model's thinking, through the HTTP
API on a real SQLite file against the fake Ollama and the fake OpenAI server: what the
model server receives is what each conversation chose, before and after a switch."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from entrypoints.container import create_container
from entrypoints.http.app import create_app
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import fake_openai

SYSTEM_FILE = "You are a test."  # config/system.md as tests.support.app writes it


def events(client: TestClient, cid: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    with client.stream("GET", f"/api/chat?conversation={cid}") as response:
        block: dict[str, str] = {}
        for line in response.iter_lines():
            if line == "":
                if block:
                    out.append((block["event"], json.loads(block["data"])))
                block = {}
                continue
            key, _, value = line.partition(": ")
            block[key] = value
    return out


def turn(client: TestClient, body: dict[str, Any]) -> tuple[str, list[tuple[str, Any]]]:
    response = client.post("/api/chat", json=body)
    assert response.status_code == 200, response.text
    cid = response.json()["conversation"]
    seen = events(client, cid)
    assert seen[-1][0] == "end" and seen[-1][1]["status"] == "completed", seen[-1]
    return cid, seen


def system_of(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"]) if request["messages"][0]["role"] == "system" else ""


@pytest.fixture
def models(ollama: FakeOllama) -> FakeOllama:
    ollama.latency = 0.0
    ollama.models = ("qwen3:latest", "llama3.2:latest", "llava:7b")
    ollama.capabilities = {"qwen3:latest": ["thinking"], "llava:7b": ["vision"]}
    ollama.contexts = {"qwen3:latest": 40960, "llama3.2:latest": 2048}
    return ollama


def test_the_model_list_comes_from_ollamas_own_endpoints(client: TestClient, models: FakeOllama) -> None:
    body = client.get("/api/models").json()
    assert body["default"] == "qwen3"
    listed = {m["name"]: m for m in body["models"]}
    assert list(listed) == ["qwen3:latest", "llama3.2:latest", "llava:7b"]
    assert listed["qwen3:latest"]["default"] and not listed["llava:7b"]["default"]
    assert listed["qwen3:latest"]["capabilities"] == ["completion", "tools", "thinking"]
    assert "vision" in listed["llava:7b"]["capabilities"]
    assert listed["llama3.2:latest"]["context"] == 2048 and listed["llava:7b"]["context"] is None
    assert listed["llama3.2:latest"]["size"] > 0 and listed["llama3.2:latest"]["family"] == "llama3.2"
    # kept briefly: a second page load does not ask the server again
    asked = len(models.shown)
    client.get("/api/models")
    assert len(models.shown) == asked


def test_the_chosen_model_and_system_prompt_reach_ollama_per_conversation_and_after_a_switch(
    client: TestClient, models: FakeOllama
) -> None:
    chosen, _ = turn(client, {"message": "one", "model": "llama3.2", "system": "Answer in French."})
    default, _ = turn(client, {"message": "two"})
    first, second = models.requests[-2:]
    # a conversation's instructions follow the server's prompt (its tool guidance stays)
    assert (first["model"], system_of(first)) == ("llama3.2", f"{SYSTEM_FILE}\n\nAnswer in French.")
    assert (second["model"], system_of(second)) == ("qwen3", SYSTEM_FILE)
    # each conversation keeps its choice on its next turn
    turn(client, {"message": "three", "conversation": chosen})
    assert (models.requests[-1]["model"], system_of(models.requests[-1])) == ("llama3.2", f"{SYSTEM_FILE}\n\nAnswer in French.")
    # a switch applies from the next turn; null goes back to the server's default
    patched = client.patch(f"/api/conversations/{chosen}", json={"model": "llava:7b", "system": None})
    assert patched.status_code == 200, patched.text
    assert patched.json()["conversation"]["model"] == "llava:7b" and patched.json()["conversation"]["system"] is None
    turn(client, {"message": "four", "conversation": chosen})
    assert (models.requests[-1]["model"], system_of(models.requests[-1])) == ("llava:7b", SYSTEM_FILE)
    detail = client.get(f"/api/conversations/{chosen}").json()
    assert detail["conversation"]["model"] == "llava:7b"
    answers = [m["model"] for m in detail["messages"] if m["role"] == "assistant"]
    assert answers == ["llama3.2", "llama3.2", "llava:7b"]  # each answer names the model that wrote it
    assert [m.get("model") for m in client.get(f"/api/conversations/{default}").json()["messages"]] == [None, "qwen3"]
    markdown = client.get(f"/api/conversations/{chosen}/export").text
    assert "## Assistant\n" in markdown and "## Assistant (" not in markdown  # the contract's heading
    assert "- Answered by: `llama3.2`, `llava:7b`" in markdown
    assert "- Model: `llava:7b`" in markdown


def test_instructions_add_to_the_servers_prompt_unless_the_conversation_replaces_it(
    client: TestClient, models: FakeOllama
) -> None:
    added, _ = turn(client, {"message": "one", "system": "Be brief."})
    assert system_of(models.requests[-1]) == f"{SYSTEM_FILE}\n\nBe brief."
    replaced, _ = turn(client, {"message": "two", "system": "Be brief.", "systemMode": "replace"})
    assert system_of(models.requests[-1]) == "Be brief."
    assert client.get(f"/api/conversations/{replaced}").json()["conversation"]["systemMode"] == "replace"
    # chosen again later, on its own: the instructions stay, only what they do changes
    patched = client.patch(f"/api/conversations/{added}", json={"systemMode": "replace"})
    assert patched.json()["conversation"]["systemMode"] == "replace"
    turn(client, {"message": "three", "conversation": added})
    assert system_of(models.requests[-1]) == "Be brief."
    refused = client.patch(f"/api/conversations/{added}", json={"systemMode": "instead"})
    assert refused.status_code == 400 and "systemMode" in refused.json()["error"]["message"]


def test_a_model_named_with_post_chat_on_a_conversation_applies_to_that_turn(client: TestClient, models: FakeOllama) -> None:
    cid, _ = turn(client, {"message": "one"})
    turn(client, {"message": "two", "conversation": cid, "model": "llama3.2:latest"})
    assert [r["model"] for r in models.requests[-2:]] == ["qwen3", "llama3.2:latest"]


def test_an_unknown_model_is_refused_with_the_fix_before_anything_is_stored(
    client: TestClient, models: FakeOllama, tmp_path: Path
) -> None:
    response = client.post("/api/chat", json={"message": "hi", "model": "mistral"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "UNKNOWN_MODEL" and "`ollama pull mistral`" in error["message"]
    assert client.get("/api/conversations").json()["conversations"] == []
    assert models.requests == []
    cid, _ = turn(client, {"message": "hi", "system": "Be brief."})
    for body in ({"model": "mistral"}, {"model": "mistral", "title": "renamed"}):
        refused = client.patch(f"/api/conversations/{cid}", json=body)
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "UNKNOWN_MODEL"
    refused = client.post("/api/chat", json={"message": "again", "conversation": cid, "model": "mistral"})
    assert refused.status_code == 400
    row = (
        sqlite3.connect(tmp_path / "db" / "sophos.db")
        .execute("SELECT title, model, system, message_count FROM conversations WHERE id = ?", (cid,))
        .fetchone()
    )
    assert row == ("hi", None, "Be brief.", 2)
    assert len(models.requests) == 1


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("model", "qwen3\n", "control characters"),
        ("model", "qw\u202een3", "control characters"),
        ("model", 7, "model must be a string"),
        ("model", "m" * 201, "longer than 200"),
        ("system", "s" * 16_001, "longer than 16000"),
        ("system", ["x"], "system must be a string"),
    ],
)
def test_a_bad_model_name_or_system_prompt_is_a_400_and_nothing_is_stored(
    client: TestClient, models: FakeOllama, field: str, value: Any, message: str
) -> None:
    response = client.post("/api/chat", json={"message": "hi", field: value})
    assert response.status_code == 400 and message in response.json()["error"]["message"]
    assert client.get("/api/conversations").json()["conversations"] == []
    assert models.requests == []


def test_a_thinking_model_streams_its_reasoning_as_its_own_events_and_it_is_stored(
    client: TestClient, models: FakeOllama
) -> None:
    models.add({"thinking": "The user greets me. I greet back.", "text": "Hello there", "token_delay": 0.01})
    cid, seen = turn(client, {"message": "hi"})
    assert models.requests[-1]["think"] is True  # qwen3 lists the thinking capability
    names = [name for name, _ in seen]
    reasoning = "".join(data for name, data in seen if name == "reasoning")
    assert reasoning.split() == "The user greets me. I greet back.".split()
    assert names.index("reasoning") < names.index("token")  # thinking first, never in the answer's text
    assert "".join(data for name, data in seen if name == "token") == "Hello there"
    answer = client.get(f"/api/conversations/{cid}").json()["messages"][-1]
    assert answer["content"] == "Hello there" and answer["reasoning"].split() == reasoning.split()
    assert answer["reasoningSeconds"] >= 0
    # the next prompt does not send the earlier thinking back
    turn(client, {"message": "and now?", "conversation": cid})
    sent = models.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert "thinking" not in sent[2] and sent[2]["content"] == "Hello there"
    exported = client.get(f"/api/conversations/{cid}/export").text
    assert "<details><summary>Thought for" in exported and "I greet back." in exported
    jsonl = client.get(f"/api/conversations/{cid}/export?format=jsonl").text
    assert any("greet back" in json.dumps(json.loads(line)) for line in jsonl.splitlines())


def test_a_model_without_the_thinking_capability_is_not_asked_to_think(client: TestClient, models: FakeOllama) -> None:
    turn(client, {"message": "hi", "model": "llama3.2"})
    assert models.requests[-1]["think"] is False


def test_an_ollama_that_lists_no_capabilities_is_asked_nothing_about_thinking(client: TestClient, models: FakeOllama) -> None:
    models.lists_capabilities = False
    turn(client, {"message": "hi"})
    assert "think" not in models.requests[-1]  # the server's own default, whatever the model


def test_think_false_asks_no_model_to_think(make_client: Any, models: FakeOllama) -> None:
    client = make_client(OLLAMA_THINK="false")
    models.add({"thinking": "hidden", "text": "Hi"})
    _, seen = turn(client, {"message": "hi"})
    assert models.requests[-1]["think"] is False and "reasoning" not in [name for name, _ in seen]


def test_the_context_budget_uses_the_chosen_models_context_size(client: TestClient, models: FakeOllama) -> None:
    def budget(seen: list[tuple[str, Any]]) -> int:
        return next(d["data"]["budget"] for n, d in seen if n == "trace" and d["event"] == "context")

    _, default = turn(client, {"message": "hi"})
    _, small = turn(client, {"message": "hi", "model": "llama3.2"})
    assert budget(default) == 8192 - 1024  # qwen3 reports 40960: MODEL_CONTEXT is the smaller
    assert budget(small) == 2048 - 1024  # llama3.2 reports 2048


@pytest.fixture
def openai_client(tmp_path: Path) -> Iterator[tuple[TestClient, Any]]:
    with fake_openai(models=("local-model", "other-model")) as fake:
        env = app_env(tmp_path, TOOLS_BACKEND="none", MODEL_BACKEND="openai", OPENAI_BASE_URL=fake.url)
        with TestClient(create_app(create_container(env))) as client:
            yield client, fake


def test_the_openai_backend_lists_its_models_and_is_sent_the_chosen_one(openai_client: tuple[TestClient, Any]) -> None:
    client, fake = openai_client
    body = client.get("/api/models").json()
    assert body["default"] == "local-model" and [m["name"] for m in body["models"]] == ["local-model", "other-model"]
    cid, _ = turn(client, {"message": "hi", "model": "other-model", "system": "Sys.", "systemMode": "replace"})
    assert fake.requests[-1]["model"] == "other-model" and fake.requests[-1]["messages"][0]["content"] == "Sys."
    client.patch(f"/api/conversations/{cid}", json={"model": None})
    turn(client, {"message": "again", "conversation": cid})
    assert fake.requests[-1]["model"] == "local-model" and fake.requests[-1]["messages"][0]["content"] == "Sys."
    refused = client.post("/api/chat", json={"message": "hi", "model": "gpt-9"})
    assert refused.status_code == 400 and "/models" in refused.json()["error"]["message"]


def test_the_model_list_says_why_it_is_empty_when_the_server_is_down(make_client: Any, models: FakeOllama) -> None:
    client = make_client(OLLAMA_HOST="http://127.0.0.1:9")
    response = client.get("/api/models")
    assert response.status_code == 200 and response.json()["default"] == "qwen3" and response.json()["models"] == []
    assert response.json()["error"]["code"] == "MODEL_UNREACHABLE" and "ollama serve" in response.json()["error"]["message"]
    # and a chosen name cannot be checked: it goes through, the run says what the server says
    assert client.post("/api/chat", json={"message": "hi", "model": "anything"}).status_code == 200
