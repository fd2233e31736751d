"""The command line (`sophos`) and the HTTP server, thin over the use cases."""

import sys

# httpx imports its own command-line client, and with it rich and pygments (~4 MB of RSS in
# every process), whenever those are installed: the dev tools install them. Nothing here runs
# httpx's CLI. A None in sys.modules makes that import fail as httpx expects when they are
# missing: it then skips its CLI (tests/unit/test_imports.py).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # None: "not importable", by design
