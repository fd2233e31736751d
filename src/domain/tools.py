"""A tool as the model sees it: a value the domain decides with (approval, recovery, prompt size)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it, plus the MCP annotations recovery relies on."""

    name: str  # `<server>__<tool>`
    description: str
    parameters: Mapping[str, Any]  # JSON schema of the arguments
    read_only: bool = False
    destructive: bool = True  # MCP's default when a server says nothing
    idempotent: bool = False
    # globs over the tool's own name, from its server's entry in mcp.json (domain.approvals)
    approve: tuple[str, ...] = ()
    auto_approve: tuple[str, ...] = ()

    @property
    def unsafe_to_repeat(self) -> bool:
        return self.destructive and not self.idempotent and not self.read_only
