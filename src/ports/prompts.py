"""SystemPromptSource: where the system prompt comes from."""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

DEFAULT_SYSTEM_PROMPT = "You are an AI assistant with access to MCP tools."


class SystemPromptSource(Protocol):
    """Read on every model call; never stored in the thread."""

    @abstractmethod
    def read(self) -> str:
        """The prompt; DEFAULT_SYSTEM_PROMPT when the source is empty. Raises AgentFailure
        when it cannot be read."""
