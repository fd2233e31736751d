"""Prompt building under the context budget: what the agent node does before each model call
on a long thread (convert the stored messages, plan what fits, build the model's input)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from tests.support.long_thread import TEXT

from adapters.langchain.messages import ConversionCache, PromptCache, to_langchain
from adapters.memory.model import ScriptedModel
from bench.table import Row
from domain.context import ContextPolicy
from domain.model import AssistantMessage, Message, ToolCall, ToolResult, UserMessage
from ports.tools import ToolSpec
from services.prompting import ContextKeeper

TOOLS = [
    ToolSpec(f"server__tool{i}", "a tool " * 20, {"type": "object", "properties": {"text": {"type": "string"}}}) for i in range(8)
]


def thread_of(turns: int) -> list[Message]:
    out: list[Message] = []
    for i in range(turns):
        out += [
            UserMessage(f"{i} {TEXT}", id=f"u{i}"),
            AssistantMessage("", (ToolCall(f"c{i}", "notes__save", {"text": f"{i} {TEXT}"}),), id=f"a{i}"),
            ToolResult(f"saved {i} {TEXT}", f"c{i}", "notes__save", id=f"t{i}"),
            AssistantMessage(f"{i} {TEXT}", id=f"r{i}"),
        ]
    return out


def cpu_ms(fn: Callable[[], object], n: int) -> float:
    """Median CPU time of this thread per call: on a shared machine, wall time mostly
    measures the wait for a core."""
    times = []
    for _ in range(n):
        t = time.thread_time()
        fn()
        times.append((time.thread_time() - t) * 1000)
    return statistics.median(times)


def prompt_building(turns: int) -> list[Row]:
    thread = thread_of(turns)
    stored = [to_langchain(m) for m in thread]
    cache = ConversionCache()

    def build(keeper: ContextKeeper, wire: PromptCache) -> None:
        # the agent node's work before a model call, and the model adapter's
        plan = keeper.plan("conversation", cache.convert(stored), "You are a test.", TOOLS)
        wire.prompt(plan.system, plan.messages)

    def timed(policy: ContextPolicy) -> float:
        keeper, wire = ContextKeeper(ScriptedModel(), policy), PromptCache()
        keeper.calibration.observe("conversation", 1000, 1300, policy.window)  # calibrated: x1.3
        build(keeper, wire)  # warm, as in a running conversation
        return cpu_ms(lambda: build(keeper, wire), 30)

    def whole() -> None:  # every message converted again: no cache
        PromptCache().prompt("You are a test.", cache.convert(stored))

    cache.convert(stored)
    base = cpu_ms(whole, 30)
    small = timed(ContextPolicy())
    large = timed(ContextPolicy(window=262_144))
    worst = max(small, large)
    return [
        (
            f"build the prompt of a {turns}-turn thread (CPU)",
            f"{base:.2f} ms (whole thread, no budget)",
            f"{small:.2f} ms (MODEL_CONTEXT 8192), {large:.2f} ms (all fits)",
            "<= 5 ms",
            worst <= 5,
        )
    ]
