"""A newcomer's set-up: `make test` installs what it needs or says in one line how to,
and the lock installs on the oldest Python the README promises."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.support import locks
from tests.support.app import ROOT

NEED = ROOT / "scripts" / "need-system-packages"
NOBODY = 65534  # Debian's `nobody`: no sudo, no apt
DEBIAN_12_PYTHON = "3.11.2"


def make(*args: str) -> subprocess.CompletedProcess[str]:
    """`make` in the checkout as a person would type it, even when the suite runs under `make test`."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, env=env, capture_output=True, text=True)


def minimum_python() -> str:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    match = re.fullmatch(r">=(\d+\.\d+)", requires)
    assert match, f"requires-python should be a plain lower bound, got {requires!r}"
    return match.group(1)


def run_as_non_root(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the script as an unprivileged user, from stdin, so that the user needs no access
    to the checkout (under /root, say)."""
    command = ["bash", "-s", "--", *args]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv:
            command = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]
        else:
            command = ["su", "nobody", "-s", "/bin/bash", "-c", 'bash -s -- "$@"', "--", *args]
    return subprocess.run(command, input=NEED.read_text(), capture_output=True, text=True, cwd="/", timeout=30)


def test_a_missing_package_stops_a_non_root_user_at_once_with_the_command_to_run() -> None:
    started = time.monotonic()
    result = run_as_non_root("sophos-test-absent-browser=sophos-test-browser", "sh=dash")
    elapsed = time.monotonic() - started

    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].endswith(": sudo apt-get install -y sophos-test-browser")
    assert "dash" not in lines[0]  # present packages are not asked for
    assert elapsed < 5


def test_nothing_missing_is_silent_and_needs_no_root() -> None:
    result = run_as_non_root("sh=dash", "bash=bash")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_the_script_is_executable_and_rejects_a_malformed_pair() -> None:
    assert os.access(NEED, os.X_OK)
    result = subprocess.run([str(NEED), "chromium"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert result.stderr.strip() == "need-system-packages: expected COMMAND=PACKAGE, got 'chromium'"


def test_make_test_needs_chromium_and_make_run_does_not() -> None:
    def dry_run(target: str) -> str:
        result = make("-n", target)
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert re.search(r"need-system-packages .*chromium=chromium", dry_run("test"))
    assert "chromium" not in dry_run("run")
    assert "chromium" not in dry_run("demo")


def test_make_refuses_a_python_older_than_the_minimum_in_one_line() -> None:
    minimum = minimum_python()
    check = ["-s", "check-python", f"PYTHON={sys.executable}"]
    assert make(*check, f"MIN_PYTHON={minimum}").returncode == 0

    result = make(*check, "MIN_PYTHON=3.99")
    assert result.returncode != 0
    ours, *make_says = result.stderr.splitlines()
    assert len(make_says) == 1 and make_says[0].startswith("make: *** "), result.stderr  # make's own trailer
    assert [ours] == [
        f"Sophos needs Python 3.99 or newer, but {sys.executable} is {sys.version.split()[0]};"
        " install a newer one and run: make PYTHON=/path/to/python3"
    ]


def test_the_makefile_and_the_readme_state_the_minimum_of_pyproject() -> None:
    minimum = minimum_python()
    assert f"MIN_PYTHON := {minimum}\n" in (ROOT / "Makefile").read_text()
    assert f"Python {minimum}+" in (ROOT / "README.md").read_text()


def collected(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return {line for line in done.stdout.splitlines() if "::" in line}


def test_make_test_fast_selects_no_test_that_needs_postgresql_another_process_or_a_browser() -> None:
    """The markers come from what a test uses (tests/conftest.py), not from a list kept by hand."""
    fast = re.search(r"^FAST := (.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert fast
    selected = collected("-m", fast.group(1), "tests/unit", "tests/contracts")
    heavy_names = ("Postgres", "conformance_case[postgres", "Mcp", "test_imports.py")
    assert not [t for t in selected if any(name in t for name in heavy_names)]
    assert any("TestSqlite" in t for t in selected) and any("[sqlite" in t for t in selected)
    heavy = collected("-m", "postgres and not processes", "tests/contracts", "tests/unit")
    assert heavy and all("Postgres" in t or "[postgres" in t for t in heavy)


def test_the_locks_pin_exactly_the_runtime_and_what_the_dev_extra_adds() -> None:
    """Runtime and dev tools are locked apart: `make run` installs no test or lint tool (they
    bring rich and pygments), and each lock holds what pyproject.toml asks for, pinned at the
    installed version. On a failure: pip install, then `python -m tests.support.locks`."""
    for lock, dists in locks.wanted().items():
        assert locks.pins(lock) == {name: d.version for name, d in dists.items()}, lock.name
    runtime = locks.pins(locks.RUNTIME)
    assert not {"pytest", "rich", "pygments", "mypy", "ruff", "import-linter"} & set(runtime)
    assert not set(runtime) & set(locks.pins(locks.DEV))


def resolve_lock_for(python: str, target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--disable-pip-version-check",
            "--ignore-installed",
            "--only-binary=:all:",
            "--python-version",
            python,
            "--target",
            str(target),
            "-r",
            str(locks.RUNTIME),
            "-r",
            str(locks.DEV),
        ],
        capture_output=True,
        text=True,
        timeout=600,  # a resolution over the network, on a loaded machine: slow is not wrong
    )


@pytest.mark.slow
@pytest.mark.timeout(900)  # a resolution of up to 600 s (resolve_lock_for), over the network
def test_the_locks_install_on_the_minimum_python_and_on_debian_12s(tmp_path: Path) -> None:
    """pip resolves every pin of both locks as wheels for the minimum Python, so a
    Requires-Python that excludes it (soupsieve 3.0.2+ needs 3.11.5) or a pin yanked for it
    fails here. Needs PyPI. Debian 12's Python is covered by the same resolution: its wheel
    tags are the minimum's (both 3.11), and no pinned version's Requires-Python (read from
    the installed distributions, which are the pins) tells the two apart."""
    oldest = f"{minimum_python()}.0"
    for lock, dists in locks.wanted().items():
        for name, dist in dists.items():
            spec = SpecifierSet(dist.metadata.get("Requires-Python") or "")
            assert spec.contains(oldest) == spec.contains(DEBIAN_12_PYTHON), (lock.name, name, str(spec))
    assert Version(DEBIAN_12_PYTHON).release[:2] == Version(oldest).release[:2]
    result = resolve_lock_for(oldest, tmp_path)
    problems = [line for line in result.stderr.splitlines() if "ERROR" in line or "yanked" in line]
    assert result.returncode == 0 and not problems, f"Python {oldest}: " + "\n".join(problems or [result.stderr])
