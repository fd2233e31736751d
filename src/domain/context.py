"""The context budget: what of a thread is sent to the model on each call.

Pure rules over plain values. A call's prompt is the system prompt and the tool
definitions (never cut), then as many of the thread's most recent messages as fit in
MODEL_CONTEXT - MODEL_RESERVE, by a cheap token estimate that each conversation
calibrates with the counts the model server reports. An assistant turn with tool calls
is sent with all of its results or not at all; the latest user message is always sent; a
tool result too large for its share of the budget is sent shortened. The thread itself
is never changed: only what is sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from domain.attachments import IMAGE_TOKENS, PromptImage, StoredFile, fenced_block, with_files
from domain.model import AssistantMessage, Message, SummaryMessage, ToolResult, UserMessage
from domain.passages import Rank, search_file
from domain.tools import ToolSpec

CHARS_PER_TOKEN = 4  # a cheap estimate; calibration corrects it per conversation
MESSAGE_OVERHEAD = 4  # role markers and separators a chat template adds to each message
SUMMARY_SHARE = 0.15  # of the prompt budget: the most a summary may take
KEEP_AFTER_SUMMARY = 0.5  # a new summary leaves this share of the room to recent messages
MARGIN = 0.95  # calibration is an average: leave room for one prompt tokenizing worse than it


@dataclass(frozen=True)
class ContextPolicy:
    """MODEL_CONTEXT, MODEL_RESERVE, CONTEXT_TOOL_SHARE and CONTEXT_SUMMARY."""

    window: int = 8192
    reserve: int = 1024
    tool_share: float = 0.25
    summaries: bool = False

    @property
    def budget(self) -> int:
        """Tokens the prompt may take: the window less the room kept for the answer."""
        return max(self.window - self.reserve, 1)


def estimate_text(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def estimate_message(message: Message) -> int:
    tokens = MESSAGE_OVERHEAD + estimate_text(message.content)
    if isinstance(message, UserMessage):
        tokens += IMAGE_TOKENS * len(message.images)
    if isinstance(message, AssistantMessage):
        for call in message.tool_calls:
            tokens += MESSAGE_OVERHEAD + estimate_text(call.name) + estimate_text(json.dumps(call.args))
    elif isinstance(message, ToolResult):
        tokens += estimate_text(message.name)
    return tokens


def estimate_tools(tools: Sequence[ToolSpec]) -> int:
    return sum(
        MESSAGE_OVERHEAD + estimate_text(t.name) + estimate_text(t.description) + estimate_text(json.dumps(dict(t.parameters)))
        for t in tools
    )


CROWDED = 0.5  # of the prompt budget: system prompt and tool definitions above it leave little room


@dataclass(frozen=True)
class FixedCost:
    """What every call sends before any message: the system prompt and the tool definitions,
    against the prompt budget (uncalibrated estimates)."""

    system: int
    tools: int
    budget: int

    @property
    def total(self) -> int:
        return self.system + self.tools

    @property
    def over(self) -> bool:
        """No message fits beside them: every call exceeds the budget, and a summary cannot help."""
        return self.total >= self.budget

    def problem(self) -> str | None:
        """What a person is told when they take more than CROWDED of the budget, else None."""
        if self.total <= self.budget * CROWDED:
            return None
        what = (
            f"the tool definitions alone take ~{self.tools:,} of {self.budget:,} tokens"
            if self.tools >= self.budget
            else f"the system prompt and tool definitions take ~{self.total:,} of {self.budget:,} tokens (tools ~{self.tools:,})"
        )
        effect = "every model call exceeds the budget" if self.over else "little room is left for the conversation"
        return f"{what} of the prompt budget (MODEL_CONTEXT - MODEL_RESERVE): {effect}"

    def warning(self) -> str | None:
        problem = self.problem()
        return f"{problem}; {CROWDED_FIX}" if problem else None


CROWDED_FIX = "raise MODEL_CONTEXT (and the model server's context length), or use fewer tools (--tools none)"


def fixed_cost(system: str, tools: Sequence[ToolSpec], policy: ContextPolicy) -> FixedCost:
    return FixedCost(MESSAGE_OVERHEAD + estimate_text(system), estimate_tools(tools), policy.budget)


def shorten(text: str, max_chars: int) -> str:
    """Head and tail of `text` within about `max_chars`, with a marker saying how much of
    the middle was left out; `text` itself when it fits."""
    if len(text) <= max_chars:
        return text
    head = max_chars * 3 // 5
    tail = max(max_chars - head, 0)
    left_out = len(text) - head - tail
    marker = f"\n\n[… {left_out:,} of {len(text):,} characters left out here to fit the model's context …]\n\n"
    return text[:head] + marker + (text[-tail:] if tail else "")


def file_chars(policy: ContextPolicy) -> int:
    """The most of the budget a message's text files take, together: a tool result's share."""
    return int(policy.budget * policy.tool_share) * CHARS_PER_TOKEN


def with_attachments(
    message: UserMessage, stored: Mapping[str, StoredFile], max_chars: int, rank: Rank | None = None
) -> UserMessage:
    """The user message as a model call sends it: its text, then each text file (a PDF's
    text too) as a fenced block under its name, the files sharing `max_chars`; a file too
    long for its share is searched (`rank`: the passages that best match the message, under
    a note saying so: domain.passages), or without a ranker shortened head and tail with a
    marker (as a tool result is); its images as images. A file no longer stored is named
    as missing."""
    share = _share(message, max_chars)
    blocks: list[str] = []
    images: list[PromptImage] = []
    for a in message.attachments:
        found = stored.get(a.digest)
        if found is None:
            blocks.append(f"[{a.name}: the file is no longer stored]")
        elif a.kind == "image":
            images.append(PromptImage(a.media_type, found.data))
        else:
            blocks.append(fenced_block(a.name, _fitted(a.name, found.text or "", message.content, share, rank)))
    return replace(message, content=with_files(message.content, blocks), images=tuple(images))


def _share(message: UserMessage, max_chars: int) -> int:
    texts = [a for a in message.attachments if a.kind != "image"]
    return max(max_chars // max(len(texts), 1), 200)


def searched_files(message: UserMessage, stored: Mapping[str, StoredFile], max_chars: int) -> tuple[str, ...]:
    """The names of the message's text files too long for their share: with_attachments sends
    their best passages (given a ranker), and the reply says so."""
    share = _share(message, max_chars)
    return tuple(
        a.name
        for a in message.attachments
        if a.kind != "image" and (found := stored.get(a.digest)) is not None and len(found.text or "") > share
    )


def _fitted(name: str, text: str, query: str, share: int, rank: Rank | None) -> str:
    if len(text) <= share or rank is None:
        return shorten(text, share)
    return search_file(text, query, share, rank).block_text(name, text.count("\n") + 1)


def summary_block(summary: SummaryMessage) -> str:
    """How a stored summary is sent: after the system prompt."""
    return f"\n\n## Summary of the earlier conversation\n\n{summary.content}"


@dataclass(frozen=True)
class PromptPlan:
    """What one model call sends, and what the user is told about it.

    `sent_from`: thread index of the first message sent (the ones before were left out or
    are covered by the summary). `summarize`: with summaries on, the thread range
    [start, end) a new summary should cover before the call is made."""

    system: str
    messages: tuple[Message, ...]
    sent_from: int
    left_out: int
    summarized: int
    shortened: int
    tokens: int  # calibrated estimate of the whole prompt
    raw_tokens: int  # the same, uncalibrated (what calibration compares with the report)
    budget: int
    summary: SummaryMessage | None = None
    summarize: tuple[int, int] | None = None


def _units(thread: Sequence[Message], start: int) -> Iterator[tuple[int, ...]]:
    """The sendable units of thread[start:], newest first: a message alone, or an assistant
    turn with tool calls together with all of its results. A turn missing a result and a
    result without its call are never yielded (they are left out)."""
    i = len(thread) - 1
    while i >= start:
        m = thread[i]
        kind = type(m)
        if kind is SummaryMessage:
            i -= 1
        elif isinstance(m, ToolResult):
            j = i
            results: list[tuple[int, str]] = []  # (index, tool call id), newest first
            while j >= start:
                r = thread[j]
                if isinstance(r, ToolResult):
                    results.append((j, r.tool_call_id))
                elif type(r) is not SummaryMessage:
                    break
                j -= 1
            turn = thread[j] if j >= start else None
            if isinstance(turn, AssistantMessage) and turn.tool_calls:
                ids = {c.id for c in turn.tool_calls}
                matched = [(k, cid) for k, cid in reversed(results) if cid in ids]
                if len(matched) == len(ids) and {cid for _, cid in matched} == ids:
                    yield (j, *(k for k, _ in matched))
            i = j - 1
        elif isinstance(m, AssistantMessage) and m.tool_calls:
            i -= 1  # its results are missing: it cannot be sent
        else:
            yield (i,)
            i -= 1


def _latest_summary(thread: Sequence[Message]) -> SummaryMessage | None:
    for m in reversed(thread):
        if isinstance(m, SummaryMessage):
            return m
    return None


def _latest_user(thread: Sequence[Message]) -> int:
    for i in range(len(thread) - 1, -1, -1):
        if isinstance(thread[i], UserMessage):
            return i
    return -1


class CostCache:
    """Token estimates of messages by identity: a stored message (the same object from call
    to call while it is unchanged) is estimated once. Bounded: cleared when full."""

    def __init__(self, size: int = 50_000) -> None:
        self.size = size
        self._items: dict[int, tuple[Message, int]] = {}

    def __call__(self, message: Message) -> int:
        hit = self._items.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        cost = estimate_message(message)
        if len(self._items) >= self.size:
            self._items.clear()
        self._items[id(message)] = (message, cost)
        return cost


def plan_prompt(
    thread: Sequence[Message],
    system: str,
    tools: Sequence[ToolSpec],
    policy: ContextPolicy,
    ratio: float = 1.0,
    cost_of: Callable[[Message], int] = estimate_message,
) -> PromptPlan:
    """The prompt of one model call over `thread` (the whole stored thread). `ratio`
    calibrates the estimate (reported tokens / estimated tokens)."""
    budget = policy.budget
    summary = _latest_summary(thread) if policy.summaries else None
    start = min(summary.covers, len(thread)) if summary else 0
    full_system = system + summary_block(summary) if summary else system
    fixed = MESSAGE_OVERHEAD + estimate_text(full_system) + estimate_tools(tools)
    max_chars = int(budget * policy.tool_share / ratio) * CHARS_PER_TOKEN
    room = budget * MARGIN / ratio - fixed  # in uncalibrated tokens
    latest_user = _latest_user(thread)
    chosen = _choose(thread, start, latest_user, room, max_chars, cost_of)
    kept = chosen.kept
    sent = tuple(m for _, messages, _ in reversed(kept) for m in messages)
    sent_from = kept[-1][0][0] if kept else len(thread)
    tail = thread[start:]
    countable = len(tail) - [type(m) for m in tail].count(SummaryMessage)
    summarized = start - [type(m) for m in thread[:start]].count(SummaryMessage) if summary else 0
    raw = fixed + chosen.used
    summarize = None
    # a summary can only make room where the room left beside the system prompt and the tools
    # holds more than the summary itself (else every turn pays for a summary in vain)
    if policy.summaries and chosen.cut and room > budget * SUMMARY_SHARE / ratio:
        summarize = _summary_range(kept, start, latest_user, room * KEEP_AFTER_SUMMARY)
    return PromptPlan(
        system=full_system,
        messages=sent,
        sent_from=sent_from,
        left_out=countable - len(sent),
        summarized=summarized,
        shortened=chosen.shortened,
        tokens=round(raw * ratio),
        raw_tokens=raw,
        budget=budget,
        summary=summary,
        summarize=summarize,
    )


_Kept = tuple[tuple[int, ...], list[Message], int]  # a unit's thread indexes, the messages sent for it, their cost


@dataclass(frozen=True)
class _Chosen:
    """The units a call sends, newest first, what they cost, how many tool results were
    shortened, and whether one did not fit (`cut`: the ones before it are left out)."""

    kept: list[_Kept]
    used: int
    shortened: int
    cut: bool


def _choose(
    thread: Sequence[Message],
    start: int,
    latest_user: int,
    room: float,
    max_chars: int,
    cost_of: Callable[[Message], int],
) -> _Chosen:
    """The newest units of thread[start:] that fit in `room`, and the latest user message
    whatever it costs (the units between a cut and it are left out)."""
    kept: list[_Kept] = []  # newest first
    used = shortened = 0
    cut = False
    for unit in _units(thread, start):
        forced = unit[0] == latest_user  # a user message is a unit of its own
        if cut and not forced:
            if 0 <= latest_user < unit[0]:
                continue  # left out on the way to the latest user message
            break
        short = 0
        if len(unit) == 1:  # a message alone: never a tool result
            messages: list[Message] = [thread[unit[0]]]
            cost = cost_of(messages[0])
        else:
            messages, cost, short = _turn(thread, unit, max_chars, cost_of)
        if forced or used + cost <= room:
            kept.append((unit, messages, cost))
            used += cost
            shortened += short
            if forced and cut:
                break
        else:
            cut = True
    return _Chosen(kept, used, shortened, cut)


def _turn(
    thread: Sequence[Message], unit: tuple[int, ...], max_chars: int, cost_of: Callable[[Message], int]
) -> tuple[list[Message], int, int]:
    """An assistant turn with its tool results as sent: each result longer than `max_chars`
    shortened; with their cost and how many were shortened."""
    messages: list[Message] = []
    cost = short = 0
    for k in unit:
        m = thread[k]
        if type(m) is ToolResult and len(m.content) > max_chars:
            m = replace(m, content=shorten(m.content, max_chars))
            short += 1
        messages.append(m)
        cost += cost_of(m)
    return messages, cost, short


def _summary_range(kept: Sequence[_Kept], start: int, latest_user: int, target: float) -> tuple[int, int] | None:
    """The range a new summary covers: everything before the newest units that fill
    `target` (so that summaries are rare), and never the latest user message."""
    end = latest_user if latest_user >= 0 else start
    used = 0
    for unit, _, cost in kept:
        used += cost
        if used > target:
            break
        end = min(end, unit[0])
    return (start, end) if end > start else None


SUMMARY_INSTRUCTIONS = (
    "You summarize the earlier part of a conversation between a user and an assistant that "
    "uses tools, so that the assistant can continue it without the full text. Keep the facts, "
    "names, numbers, decisions, open questions and what tools returned that still matters. "
    "Write plain prose, at most {words} words. Answer with the summary only."
)


def summary_request(previous: SummaryMessage | None, messages: Sequence[Message], policy: ContextPolicy) -> tuple[str, str]:
    """The (system prompt, user message) that ask the model for a summary of `messages`,
    folding in the `previous` summary; sized to fit the model's window."""
    words = max(int(policy.budget * SUMMARY_SHARE * 0.7), 50)
    lines: list[str] = []
    if previous is not None:
        lines.append(f"Summary so far:\n{previous.content}\n")
    per_message = max(policy.budget * CHARS_PER_TOKEN // 8, 200)
    for m in messages:
        if isinstance(m, UserMessage):
            lines.append(f"User: {shorten(m.content, per_message)}")
        elif isinstance(m, AssistantMessage):
            calls = "".join(f" [called {c.name} {json.dumps(c.args)}]" for c in m.tool_calls)
            lines.append(f"Assistant: {shorten(m.content, per_message)}{calls}")
        elif isinstance(m, ToolResult):
            lines.append(f"Tool {m.name} returned: {shorten(m.content, per_message)}")
    room = (policy.budget - estimate_text(SUMMARY_INSTRUCTIONS) - 2 * MESSAGE_OVERHEAD) * CHARS_PER_TOKEN
    text = shorten("\n".join(lines), max(room, 200))
    return SUMMARY_INSTRUCTIONS.format(words=words), text


def clip_summary(text: str, policy: ContextPolicy) -> str:
    """A summary held to its share of the budget, whatever the model wrote."""
    return shorten(text.strip(), int(policy.budget * SUMMARY_SHARE) * CHARS_PER_TOKEN)
