"""The spans of a real `sophos serve` run in Arize Phoenix (issue 47, item 3's receiver): one
trace per run with the GenAI attributes, as Phoenix reads them (it maps the conventions onto
its own span kinds). `make test-phoenix`; Phoenix is installed into a cache once
(tests/support/phoenix.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support.app import app_env, config_dir, ledger_server_entry
from tests.support.fake_ollama import fake_ollama
from tests.support.phoenix import phoenix
from tests.support.server import LiveServer

pytestmark = [pytest.mark.phoenix, pytest.mark.timeout(3900)]


def test_phoenix_shows_a_run_with_a_tool_call_as_one_trace_with_the_genai_attributes(tmp_path: Path) -> None:
    config_dir(tmp_path, {"ledger": ledger_server_entry(tmp_path / "ledger.jsonl")})
    (tmp_path / "phoenix").mkdir()
    with phoenix(tmp_path / "phoenix") as px, fake_ollama() as ollama:
        ollama.add({"tool_calls": [("ledger__append", {"label": "seen"})], "text": ""}, {"text": "Appended."})
        server = LiveServer(
            app_env(tmp_path, ollama.url, OTEL_EXPORTER_OTLP_ENDPOINT=px.url, OTEL_BSP_SCHEDULE_DELAY="100"), tmp_path
        ).start()
        try:
            cid = server.post("/api/chat", {"message": "append one"}).json()["conversation"]
            deadline = time.monotonic() + 60
            while len(spans := px.spans()) < 4:
                assert time.monotonic() < deadline, f"Phoenix has {len(spans)} span(s)"
                time.sleep(0.2)
        finally:
            server.stop()
    assert len({s["context"]["trace_id"] for s in spans}) == 1
    named = {s["name"]: s for s in spans}
    assert sorted(s["name"] for s in spans) == ["chat qwen3", "chat qwen3", "execute_tool ledger__append", "invoke_agent sophos"]
    agent, tool = named["invoke_agent sophos"], named["execute_tool ledger__append"]
    assert agent["parent_id"] is None and agent["attributes"]["gen_ai.conversation.id"] == cid
    assert all(s["parent_id"] == agent["context"]["span_id"] for s in spans if s is not agent)
    assert tool["attributes"]["gen_ai.tool.name"] == "ledger__append" and tool["status_code"] == "OK"
    chats = [s for s in spans if s["name"] == "chat qwen3"]
    assert all(c["span_kind"] == "LLM" and c["attributes"]["gen_ai.request.model"] == "qwen3" for c in chats)
    assert sorted(c["attributes"]["gen_ai.response.finish_reasons"][0] for c in chats) == ["stop", "tool_calls"]
    assert all(isinstance(c["attributes"]["gen_ai.usage.input_tokens"], int) for c in chats)
