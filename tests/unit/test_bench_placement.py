"""The peers benchmark's placement: the system measured on one CPU, the load on the others."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from bench.serving import Placement, placed, split_cpus


def test_without_a_split_nothing_is_pinned() -> None:
    assert Placement().command(["sophos", "serve"]) == ["sophos", "serve"]
    before = os.sched_getaffinity(0)
    with placed(None):
        assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2 or shutil.which("taskset") is None,
    reason="one CPU, or no taskset: the benchmark runs unpinned there",
)
def test_the_server_and_the_load_get_cpus_of_their_own_and_the_affinity_comes_back() -> None:
    before = os.sched_getaffinity(0)
    where = split_cpus()
    assert where.server is not None and where.load is not None
    assert len(where.server) == 1 and not where.server & where.load and where.server | where.load == before
    # a process started under the command runs on the server's CPU only
    out = subprocess.run(
        where.command(["python3", "-c", "import os; print(sorted(os.sched_getaffinity(0)))"]),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == str(sorted(where.server))
    with placed(where.load):
        assert os.sched_getaffinity(0) == where.load
    assert os.sched_getaffinity(0) == before
