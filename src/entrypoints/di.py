"""dependency-injector, loaded without its pydantic-settings integration.

dependency-injector (4.49.1, the latest) imports pydantic-settings when its providers module
loads, whenever pydantic-settings is installed (`mcp` installs it), and offers no switch.
Sophos uses none of that integration, and the import is about 170 ms of CPU on every command
that builds the container (`make bench-startup`, docs/benchmarks.md#startup). The name is
hidden from that one import only: a later `import pydantic_settings` (the MCP client's) loads
it as usual, and when it is loaded already nothing is hidden."""

from __future__ import annotations

import sys

_HIDDEN = "pydantic_settings"
_hide = _HIDDEN not in sys.modules
if _hide:
    sys.modules[_HIDDEN] = None  # type: ignore[assignment]  # an ImportError for this import alone
try:
    from dependency_injector import containers, providers
finally:
    if _hide:
        del sys.modules[_HIDDEN]

__all__ = ["containers", "providers"]
