"""Fixes worded for the command line. The model adapters' messages name the page's way to
try Sophos without a model server (`make demo`); a person at the CLI has its own."""

from __future__ import annotations

PAGE_WAY = "run `make demo`"
# the flag that picks the model backend is the one `global_options` defines (base.py)
CLI_WAY = "add `--backend demo --tools demo` to try it offline"


def for_cli(text: str) -> str:
    """`text` with the page's offline way replaced by the CLI's."""
    return text.replace(PAGE_WAY, CLI_WAY)
