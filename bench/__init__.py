"""Benchmarks: `make bench` (python -m bench) prints every figure beside its baseline."""
