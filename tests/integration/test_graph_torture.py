"""The short form of the kill -9 harness over LangGraph's integration suite's graphs hosted by
`sophos serve` (tests/support/graph_torture.py; `make soak-graphs N=100` runs the long form)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.graph_torture import run


@pytest.mark.timeout(900)
@pytest.mark.slow
def test_the_suite_s_graphs_killed_mid_stream_end_as_uninterrupted_with_their_interrupt_answered_once(tmp_path: Path) -> None:
    tallies = run(kills=4, seed=2044, workdir=tmp_path)
    print(tallies.table())
    assert tallies.violations == []
    assert tallies.kills == 4 and tallies.trials >= 4 and tallies.interrupts_answered > 0
