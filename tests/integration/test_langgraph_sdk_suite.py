"""LangGraph's own sdk-py integration tests against a real `sophos serve` (issues 29, 44).

The tests are langgraph-sdk's, not ours: they ship in its sdist on PyPI, which is fetched
once (pinned by hash, tests/support/langgraph-sdk-sdist.txt; tests/support/sdk_suite.py)
into a cache outside the work tree and run unchanged by a pytest of their own against
Sophos's LangGraph API, in a private network namespace where the server owns port 2024
and serves the suite's own langgraph.json. The files below must pass whole but for the
tests listed as failing (docs/langgraph-api.md says which and why); a test listed as
failing that starts to pass fails here, so the list is kept true."""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.sdk_suite import PORT, run_suite

# langgraph-sdk's tests/integration/, by file and outcome against Sophos
# test_messages.py and test_extensions.py pass too, but not every time on a loaded machine (nor
# against langgraph dev): the SDK learns of an interrupt on a connection of its own and ends the
# projection being read then, which may not have read the run's events from its own connection
# yet (docs/langgraph-api.md). They are left out of `make test`; `sdk_suite sophos` runs them.
THREAD_PROTOCOL = [
    "test_cancel.py",
    "test_concurrent.py",
    "test_lifecycle.py",
    "test_reconnect.py",
    "test_remote_graph_v3.py",
    "test_subgraphs.py",
    "test_tools.py",
    "test_update_state.py",
    "test_values.py",
    "test_websocket.py",
]
FILES = [
    "test_threads_crud.py",
    "test_runs.py",
    "test_factory_graph.py",
    "test_assistants.py",
    "test_helpers.py",
    *THREAD_PROTOCOL,
]
MODES = ("async", "sync")
PASSING = [
    *(f"test_threads_{what}_{mode}" for what in ("create_get_delete", "search", "copy", "history_after_run") for mode in MODES),
    *(f"test_runs_{what}_{mode}" for what in ("create_get_list", "wait") for mode in MODES),
    *(f"test_factory_graph_executes_{mode}" for mode in MODES),
    *(f"test_assistants_{what}_{mode}" for what in ("crud", "graph_introspection") for mode in MODES),
    *(f"test_get_tree_and_extensions_cache_{mode}" for mode in MODES),
    # LangGraph's thread protocol (/threads/{id}/commands, its event stream and websocket)
    *(f"test_{name}_{mode}" for name in ("cancel", "lifecycle", "tools", "values") for mode in MODES),
    *(
        f"test_{name}_{mode}"
        for name in ("update_state", "websocket", "concurrent_streams", "close_mid_iteration")
        for mode in MODES
    ),
    *(f"test_subgraphs_{graph}_{mode}" for graph in ("agent", "deep_agent") for mode in MODES),
    "test_abort_mid_run_cancels_server_side",
    "test_async_happy_path_yields_output",
    "test_async_interrupt_path_surfaces_interrupts",
    "test_async_resume_after_interrupt",
    "test_sync_happy_path_yields_output",
]
FAILING: list[str] = []  # every test of those files passes


@contextmanager
def port_taken_here(port: int) -> Iterator[None]:
    """`port` held on this machine's loopback for the block: by us, or already by another process."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise
        yield


def test_langgraph_sdk_s_own_thread_run_assistant_and_thread_protocol_tests_pass_against_sophos_hosting_the_suite_s_graphs(
    tmp_path: Path,
) -> None:
    # the suite's server owns 2024 in its own network namespace while this machine's 2024 is taken
    with port_taken_here(PORT):
        run = run_suite("sophos", tmp_path, FILES)
    outcomes = {test.partition("::")[2]: outcome for test, outcome in run.outcomes.items()}
    assert {name: outcomes.get(name) for name in PASSING} == dict.fromkeys(PASSING, "passed"), outcomes
    assert {name: outcomes.get(name) for name in FAILING} == dict.fromkeys(FAILING, "failed"), outcomes
    assert set(outcomes) == set(PASSING + FAILING), outcomes  # no test of those files left unaccounted for
    # it served with the suite's own langgraph.json loaded: its four graphs and their packages imported
    assert (
        f"Graphs loaded from {tmp_path / 'integration' / 'langgraph.json'}: agent, tools_agent, deep_agent, factory_agent"
    ) in (tmp_path / "server.log").read_text()


STORE_TESTS = [
    f"test_store_{what}_{mode}" for what in ("put_get_delete", "search_and_list_namespaces") for mode in ("async", "sync")
]


def test_langgraph_sdk_s_own_store_tests_pass_against_sophos(tmp_path: Path) -> None:
    # issue 45: langgraph-sdk's tests/integration/test_store.py, unchanged
    with port_taken_here(PORT):
        run = run_suite("sophos", tmp_path, ["test_store.py"])
    outcomes = {test.partition("::")[2]: outcome for test, outcome in run.outcomes.items()}
    assert outcomes == dict.fromkeys(STORE_TESTS, "passed"), outcomes


def test_langgraph_sdk_s_own_cron_tests_pass_against_sophos(tmp_path: Path) -> None:
    # issue 46: langgraph-sdk's tests/integration/test_crons.py, unchanged (crons over the
    # schedules, on the suite's own `agent` graph)
    with port_taken_here(PORT):
        run = run_suite("sophos", tmp_path, ["test_crons.py"])
    outcomes = {test.partition("::")[2]: outcome for test, outcome in run.outcomes.items()}
    assert outcomes == {f"test_crons_create_search_delete_{mode}": "passed" for mode in MODES}, outcomes
