"""A hosted graph's run in the traces (an invoke_agent span named by its graph; the calls in
the user's graph are not seen) and a write of its thread's state in the audit log (issue 47)."""

from __future__ import annotations

from pathlib import Path

from tests.integration.test_hosted_graphs import hosting, wait_for
from tests.support.otlp_receiver import otlp_receiver


def test_a_hosted_run_is_one_invoke_agent_span_named_by_its_graph(tmp_path: Path) -> None:
    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        with hosting(tmp_path, **env) as (_, client, _log):
            tid = client.threads.create()["thread_id"]
            run = client.runs.create(tid, "asker", input={"items": []}, interrupt_before=["ask"])
            client.runs.join(tid, run["run_id"])
            wait_for(lambda: receiver.snapshot(), "the run's span")
        (span,) = receiver.snapshot()
    assert span.name == "invoke_agent asker" and span.parent_id is None
    assert span.attributes["gen_ai.agent.name"] == "asker" and span.attributes["sophos.run.id"] == run["run_id"]
    assert span.attributes["gen_ai.conversation.id"] == tid


def test_a_hosted_threads_state_written_by_hand_is_audited(tmp_path: Path) -> None:
    with hosting(tmp_path) as (server, client, _log):
        tid = client.threads.create()["thread_id"]
        run = client.runs.create(tid, "asker", input={"items": []}, interrupt_before=["ask"])
        client.runs.join(tid, run["run_id"])
        written = client.threads.update_state(tid, {"items": ["by hand"]}, as_node="ask")
        answer = server.get("/api/audit")
        assert answer.status_code == 200, answer.text
        last = answer.json()["entries"][-1]
    assert (last["action"], last["target"]) == ("state.updated", tid)
    assert last["detail"] == f"asker as ask: {written['checkpoint']['checkpoint_id']}"
