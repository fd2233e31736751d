"""The Ollama request body: each message of a thread encoded once, the body valid JSON."""

from __future__ import annotations

import json

from adapters.ollama.http import LineClient
from adapters.ollama.wire import OllamaChat
from domain.model import AssistantMessage, UserMessage
from ports.tools import ToolSpec


def test_a_threads_messages_are_encoded_once_and_the_body_is_the_whole_request() -> None:
    chat = OllamaChat(LineClient("http://127.0.0.1:1", 1.0), "qwen3", think=False, context=4096)
    thread = [UserMessage("hi é"), AssistantMessage("hello")]
    first = chat.prompts.encoded("sys", thread)
    later = chat.prompts.encoded("sys", [*thread, UserMessage("more")])
    assert all(a is b for a, b in zip(first, later, strict=False)) and len(later) == 4
    tool = ToolSpec("t__x", "x", {})
    body = json.loads(chat.body("sys", thread, [tool]))
    assert body == {
        "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi é"},
                     {"role": "assistant", "content": "hello"}],
        "model": "qwen3", "stream": True, "think": False, "options": {"num_ctx": 4096},
        "tools": [{"type": "function", "function": {"name": "t__x", "description": "x",
                                                    "parameters": {"type": "object", "properties": {}}}}],
    }
