"""A model client is bound to the tool list once while the toolbox lists the same specs."""

from __future__ import annotations

from typing import Any

from langchain_ollama import ChatOllama

from adapters.langchain.streaming import ToolBinding
from ports.tools import ToolSpec


def spec(name: str) -> ToolSpec:
    return ToolSpec(name, f"{name} a thing", {"type": "object", "properties": {"a": {"type": "string"}}})


def tool_names(bound: Any) -> list[str]:
    return [t["function"]["name"] for t in bound.kwargs["tools"]]


def test_the_same_specs_listed_again_reuse_the_bound_client_and_its_schemas() -> None:
    chat, binding = ChatOllama(model="m"), ToolBinding()
    specs = [spec("read"), spec("write")]
    first = binding.bind(chat, specs)
    again = binding.bind(chat, list(specs))  # a new list of the same objects, as a toolbox returns
    assert again is first
    assert tool_names(first) == ["read", "write"]


def test_a_changed_tool_list_is_bound_again() -> None:
    chat, binding = ChatOllama(model="m"), ToolBinding()
    read, write = spec("read"), spec("write")
    first = binding.bind(chat, [read, write])
    fewer = binding.bind(chat, [read])
    renewed = binding.bind(chat, [read, spec("write")])  # a server restarted: new spec objects
    assert tool_names(fewer) == ["read"]
    assert renewed is not first and tool_names(renewed) == ["read", "write"]


def test_each_client_has_its_own_binding_and_no_tools_means_the_client_itself() -> None:
    a, b, binding = ChatOllama(model="m"), ChatOllama(model="m"), ToolBinding()
    specs = [spec("read")]
    assert binding.bind(a, specs) is not binding.bind(b, specs)
    assert binding.bind(a, []) is a
