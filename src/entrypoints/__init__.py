"""The command line (`sophos`) and the HTTP server, thin over the use cases."""

import sys

# httpx imports its own command-line client, and with it rich and pygments (~3 MB of RSS in
# every process), whenever those are installed. Only dev tools bring them (import-linter and
# schemathesis need rich, pytest pygments), and they are locked apart (requirements-dev.lock):
# a venv made by `make run` has neither, and this line changes nothing there. It stays for the
# venv that `make test` and `make bench` share, where the benchmarks measure RSS. Nothing here
# runs httpx's CLI. A None in sys.modules makes that import fail as httpx expects when they are
# missing: it then skips its CLI (tests/unit/test_imports.py).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # None: "not importable", by design
