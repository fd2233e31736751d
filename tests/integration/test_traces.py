"""OpenTelemetry GenAI traces that a kill -9 cannot lose (issue 47 items 1 and 2), received by a
real OTLP/HTTP receiver (tests/support/otlp_receiver.py: the OpenTelemetry project's protobuf
messages, decoded as a collector does)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from domain.commands import start_command
from domain.events import StreamEvent
from domain.model import RunStatus
from entrypoints.container import close_container, create_container
from entrypoints.settings import SettingsError
from tests.support.app import ROOT, app_env, config_dir, ledger_server_entry
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan, otlp_receiver
from tests.support.server import LiveServer

TOOL_REPLY = {"tool_calls": [("ledger__append", {"label": "traced"})], "text": ""}


def wait_until(predicate: Callable[[], object], timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not met in {timeout} s"
        time.sleep(0.05)


def ledger_starts(book: Path) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in book.read_text().splitlines()] if book.exists() else []
    return [e for e in lines if e["event"] == "start"]


def by_name(spans: list[ReceivedSpan]) -> dict[str, list[ReceivedSpan]]:
    out: dict[str, list[ReceivedSpan]] = {}
    for s in spans:
        out.setdefault(s.name.split(" ")[0], []).append(s)
    return out


def assert_no_orphans(spans: list[ReceivedSpan]) -> None:
    ids = {s.span_id for s in spans}
    assert all(s.parent_id in ids for s in spans if s.parent_id), "a span's parent never reached the receiver"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with otlp_receiver() as r:
        yield r


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with fake_ollama() as fake:
        yield fake


def traced_env(tmp_path: Path, ollama: FakeOllama, receiver: OtlpReceiver, **extra: str) -> dict[str, str]:
    book = tmp_path / "ledger.jsonl"
    config_dir(tmp_path, {"ledger": ledger_server_entry(book)})
    # shipped every 0.1 s (the default waits 5 s between shipments)
    return app_env(tmp_path, ollama.url, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY="100", **extra)


async def run_to_end(container: Any, message: str) -> str:
    service = container.run_service()
    started = await service.start(start_command(message, None))
    events = await service.follow(started.conversation_id, 0)
    if not isinstance(events, StreamEvent):
        async for _ in events:
            pass
    return str(started.conversation_id)


def test_a_run_with_a_tool_call_reaches_the_receiver_as_one_trace_with_genai_attributes(
    tmp_path: Path, ollama: FakeOllama, receiver: OtlpReceiver
) -> None:
    ollama.add(TOOL_REPLY, {"text": "Appended."})
    env = traced_env(
        tmp_path,
        ollama,
        receiver,
        OTEL_SERVICE_NAME="sophos-test",
        OTEL_RESOURCE_ATTRIBUTES="deployment.environment=ci,team=agents",
        OTEL_EXPORTER_OTLP_HEADERS="x-api-key=s3cret%20key",
    )
    server = LiveServer(env, tmp_path).start()
    try:
        cid = server.post("/api/chat", {"message": "append one"}).json()["conversation"]
        wait_until(lambda: len(receiver.snapshot()) >= 4, what="4 spans received")
        spans = receiver.snapshot()
        names = by_name(spans)
        assert sorted(names) == ["chat", "execute_tool", "invoke_agent"] and len(names["chat"]) == 2, [s.name for s in spans]
        assert len({s.trace_id for s in spans}) == 1  # one trace per run
        (agent,) = names["invoke_agent"]
        assert agent.parent_id is None and agent.status == "ok" and agent.kind == "internal"
        assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
        assert agent.attributes["gen_ai.conversation.id"] == cid
        run_id = agent.attributes["sophos.run.id"]
        first, second = sorted(names["chat"], key=lambda s: s.start)
        assert first.name == "chat qwen3" and first.kind == "client" and first.parent_id == agent.span_id
        assert first.attributes["gen_ai.operation.name"] == "chat"
        assert first.attributes["gen_ai.request.model"] == "qwen3"
        assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
        assert second.attributes["gen_ai.response.finish_reasons"] == ("stop",)
        assert (first.attributes["gen_ai.usage.input_tokens"], first.attributes["gen_ai.usage.output_tokens"]) == ollama.reported[
            0
        ]
        assert first.attributes["gen_ai.conversation.id"] == cid and first.attributes["sophos.run.id"] == run_id
        (tool,) = names["execute_tool"]
        assert tool.name == "execute_tool ledger__append" and tool.parent_id == agent.span_id and tool.status == "ok"
        assert tool.attributes["gen_ai.tool.name"] == "ledger__append"
        (started,) = ledger_starts(tmp_path / "ledger.jsonl")
        assert started["key"] == f"{cid}:{tool.attributes['gen_ai.tool.call.id']}"
        assert first.end <= tool.start and tool.end <= second.start and agent.start <= first.start and second.end <= agent.end
        # content is captured only when asked for
        assert not any(
            k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.arg")) for s in spans for k in s.attributes
        )
        assert spans[0].resource["service.name"] == "sophos-test" and spans[0].resource["team"] == "agents"
        assert spans[0].scope == "sophos" and receiver.headers[0]["x-api-key"] == "s3cret key"
        assert receiver.headers[0]["content-type"] == "application/x-protobuf"
        assert_no_orphans(spans)
    finally:
        server.stop()


async def test_message_content_is_on_the_spans_only_with_the_conventions_variable(
    tmp_path: Path, ollama: FakeOllama, receiver: OtlpReceiver
) -> None:
    ollama.add(TOOL_REPLY, {"text": "Appended."})
    env = traced_env(tmp_path, ollama, receiver, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    c = create_container(env)
    try:
        await run_to_end(c, "append the secret word")
        assert await c.supervisor().ship_traces() == 4
    finally:
        await close_container(c)
    names = by_name(receiver.snapshot())
    first = min(names["chat"], key=lambda s: s.start)
    sent = json.loads(first.attributes["gen_ai.input.messages"])
    assert sent[-1] == {"role": "user", "parts": [{"type": "text", "content": "append the secret word"}]}
    answered = json.loads(first.attributes["gen_ai.output.messages"])
    assert answered[0]["parts"][0]["name"] == "ledger__append" and answered[0]["finish_reason"] == "tool_calls"
    (tool,) = names["execute_tool"]
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"label": "traced"}
    assert tool.attributes["gen_ai.tool.call.result"] == "appended traced"


async def test_a_lost_acknowledgement_sends_the_same_spans_again_with_the_same_ids(
    tmp_path: Path, ollama: FakeOllama, receiver: OtlpReceiver
) -> None:
    ollama.add(TOOL_REPLY, {"text": "Appended."})
    c = create_container(traced_env(tmp_path, ollama, receiver))
    try:
        await run_to_end(c, "append one")
        receiver.lose_answers = 1
        await c.supervisor().ship_traces()
        await c.supervisor().ship_traces()
        assert await c.supervisor().ship_traces() == 0  # all acknowledged: nothing more is sent
    finally:
        await close_container(c)
    spans = receiver.snapshot()
    counts = Counter(s.span_id for s in spans)
    assert len(counts) == 4 and set(counts.values()) == {2}, counts
    first_copy = {s.span_id: s for s in spans[:4]}
    assert all(first_copy[s.span_id] == s for s in spans[4:])  # the same span, byte for byte


def test_spans_of_a_run_killed_during_a_tool_call_all_reach_the_receiver_after_a_restart(
    tmp_path: Path, ollama: FakeOllama, receiver: OtlpReceiver
) -> None:
    """kill -9 while the ledger's tool runs; a restart with AUTO_RESUME adopts the run. Every
    model request and every tool execution has one span, the cut call's marked interrupted,
    the resumed run in the same trace, no span without its parent."""
    book = tmp_path / "ledger.jsonl"
    # long enough to be killed in (the kill follows the ledger's "start" at once); the adopted
    # run sends the same call again, which takes as long
    ollama.add({"tool_calls": [("ledger__append", {"label": "slow", "delay": 4})], "text": ""})
    env = traced_env(tmp_path, ollama, receiver, RUN_LEASE_SECONDS="2")
    first = LiveServer(env, tmp_path).start()
    try:
        cid = first.post("/api/chat", {"message": "append slowly"}).json()["conversation"]
        wait_until(lambda: ledger_starts(book), what="the tool call started")
        first.kill()
    finally:
        first.stop()
    ollama.add({"text": "Done after the crash."})
    ollama.default = {"text": "Done after the crash."}
    # the adopted run sends the (idempotent) call again
    second = LiveServer({**env, "AUTO_RESUME": "true"}, tmp_path).start()
    try:
        wait_until(lambda: second.get(f"/api/conversations/{cid}").json()["conversation"]["status"] == "completed", 60)
        wait_until(lambda: len(by_name(receiver.snapshot()).get("invoke_agent", [])) == 2, what="both runs' spans")
        wait_until(lambda: len(receiver.snapshot()) >= 2 + len(ollama.requests) + len(ledger_starts(book)), what="all spans")
    finally:
        second.stop()
    spans = receiver.snapshot()
    assert len(spans) == len({s.span_id for s in spans})  # no acknowledgement was lost here: no repeat
    names = by_name(spans)
    assert len(names["chat"]) == len(ollama.requests)  # one span per model request the server logged
    executions = Counter(e["key"] for e in ledger_starts(book))
    tools = Counter(f"{cid}:{s.attributes['gen_ai.tool.call.id']}" for s in names["execute_tool"])
    assert tools == executions and sum(executions.values()) == 2
    cut = [s for s in names["execute_tool"] if s.attributes.get("sophos.interrupted")]
    assert len(cut) == 1 and cut[0].status == "error" and "interrupted" in cut[0].status_message
    assert len({s.trace_id for s in spans}) == 1  # the resumed run joined the trace
    killed, adopted = sorted(names["invoke_agent"], key=lambda s: s.start)
    assert killed.attributes["sophos.interrupted"] is True and killed.status == "error"
    assert adopted.parent_id == killed.span_id and adopted.status == "ok" and adopted.attributes["sophos.run.resumed"] is True
    assert_no_orphans(spans)


def test_without_an_endpoint_nothing_is_imported_nor_written(tmp_path: Path) -> None:
    script = """
import asyncio, sqlite3, sys
from domain.commands import start_command
from entrypoints.container import close_container, create_container
from tests.support.app import app_env
from pathlib import Path

async def main() -> None:
    c = create_container(app_env(Path(sys.argv[1]), MODEL_BACKEND="demo", TOOLS_BACKEND="demo"))
    service = c.run_service()
    started = await service.start(start_command("what time is it?", None))
    events = await service.follow(started.conversation_id, 0)
    if not hasattr(events, "event"):
        async for _ in events:
            pass
    await c.supervisor().start()
    await c.supervisor().close()
    await close_container(c)

asyncio.run(main())
db = sqlite3.connect(Path(sys.argv[1]) / "db" / "sophos.db")
# langsmith (under langchain-core) imports the SDK's TracerProvider when it is installed; the
# exporter, protobuf and our sink are what tracing would load
loaded = sorted(m for m in sys.modules if m.startswith(("opentelemetry.exporter", "opentelemetry.proto", "google.protobuf", "adapters.otel.sink", "services.traces")))
print(loaded, db.execute("SELECT count(*) FROM trace_spans").fetchone()[0])
"""
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": f"{ROOT}:{ROOT / 'src'}", "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["[]", "0"]


@pytest.mark.parametrize("protocol", ["grpc", "http/json"])
def test_a_protocol_the_exporter_does_not_speak_is_a_clear_settings_error(tmp_path: Path, protocol: str) -> None:
    env = app_env(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318", OTEL_EXPORTER_OTLP_PROTOCOL=protocol)
    with pytest.raises(SettingsError, match="http/protobuf"):
        create_container(env)


def test_a_malformed_number_is_a_clear_settings_error(tmp_path: Path) -> None:
    env = app_env(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318", OTEL_BSP_SCHEDULE_DELAY="soon")
    with pytest.raises(SettingsError, match="OTEL_BSP_SCHEDULE_DELAY is a number"):
        create_container(env)


async def test_the_title_call_is_a_span_of_its_runs_trace_ended_with_its_tokens(
    tmp_path: Path, ollama: FakeOllama, receiver: OtlpReceiver
) -> None:
    from tests.integration.test_titles import answers

    ollama.responder = answers({"text": "Lighthouse keepers"})
    c = create_container(traced_env(tmp_path, ollama, receiver, AUTO_TITLE="true"))
    try:
        cid = await run_to_end(c, "tell me about lighthouses")
        runs, after = c.store(), c.supervisor().after_runs
        latest = await runs.latest_run(cid)
        assert latest is not None and after is not None
        await after.follow_up(cid, RunStatus.COMPLETED, latest.id)  # what the supervisor does when a run ends
        conv = await runs.get_conversation(cid)
        assert conv is not None and conv.title == "Lighthouse keepers"
        await c.supervisor().ship_traces()
    finally:
        await close_container(c)
    names = by_name(receiver.snapshot())
    (agent,) = names["invoke_agent"]
    title = [s for s in names["chat"] if s.attributes.get("sophos.call.purpose") == "title"]
    assert len(title) == 1 and len(names["chat"]) == 2
    assert title[0].parent_id == agent.span_id and title[0].trace_id == agent.trace_id
    assert title[0].attributes["gen_ai.usage.input_tokens"] > 0 and title[0].status == "ok"
    assert_no_orphans(receiver.snapshot())
