"""The two lock files, derived from pyproject.toml and the packages installed in this venv:
requirements.lock pins the runtime dependencies and everything they need (what `make run`
installs); requirements-dev.lock pins what the dev extra adds on top (what `make test` adds).

    python -m tests.support.locks          # rewrite both from the venv, after a pip install
"""

from __future__ import annotations

import tomllib
from importlib.metadata import Distribution, distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
RUNTIME, DEV = ROOT / "requirements.lock", ROOT / "requirements-dev.lock"
HEADERS = {
    RUNTIME: "# Runtime only: what `make run` installs (pyproject.toml's dependencies, pinned with everything\n"
    "# they need). The test and lint tools are in requirements-dev.lock.\n",
    DEV: "# What `make test` adds on top of requirements.lock (pyproject.toml's dev extra, pinned).\n"
    "# Installed together with requirements.lock, so one resolution covers both.\n",
}


def closure(requirements: list[str]) -> dict[str, Distribution]:
    """Every installed distribution the requirements pull in, by canonical name."""
    found: dict[str, Distribution] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(Requirement(r), frozenset[str]()) for r in requirements]
    while todo:
        req, extras = todo.pop()
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in extras or {""}):
            continue
        key = (canonicalize_name(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        dist = distribution(req.name)
        found[key[0]] = dist
        todo += [(Requirement(r), frozenset(req.extras)) for r in dist.requires or []]
    return found


def wanted() -> dict[Path, dict[str, Distribution]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = closure(project["dependencies"])
    dev = closure(project["optional-dependencies"]["dev"])
    return {RUNTIME: runtime, DEV: {k: d for k, d in dev.items() if k not in runtime}}


def pins(lock: Path) -> dict[str, str]:
    """A lock's pins as {canonical name: version}."""
    lines = (line.split("#")[0].strip() for line in lock.read_text().splitlines())
    return {canonicalize_name(name): version for name, _, version in (ln.partition("==") for ln in lines if ln)}


def render(lock: Path, dists: dict[str, Distribution]) -> str:
    return HEADERS[lock] + "".join(f"{dists[k].metadata['Name']}=={dists[k].version}\n" for k in sorted(dists))


if __name__ == "__main__":
    for lock, dists in wanted().items():
        lock.write_text(render(lock, dists))
        print(f"{lock.name}: {len(dists)} pins")
