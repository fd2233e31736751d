"""The benchmarks import what the product exports: a rename in src/ must not leave `make bench`
broken until someone runs it."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.parametrize("module", sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "__init__"))
def test_every_benchmark_module_imports(module: str) -> None:
    importlib.import_module(f"bench.{module}")
