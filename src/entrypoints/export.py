"""The two exports (seed-contract 6): a Markdown transcript and the checkpoint JSONL, written
here at the edge from what the conversation use cases read. Generated on request, never read
back."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence

from domain.model import (
    AssistantMessage,
    CheckpointSummary,
    Conversation,
    Message,
    SummaryMessage,
    ToolResult,
    UserMessage,
    iso,
)
from domain.principals import LOCAL, Principal
from entrypoints.dto import checkpoint_dto, message_to_dto
from services.conversations import ConversationService


async def export_text(
    service: ConversationService, conversation: object, fmt: str | None, *, by: Principal = LOCAL
) -> tuple[Conversation, str]:
    """The conversation's checkpoint JSONL with `fmt` "jsonl", else its Markdown transcript."""
    if fmt == "jsonl":
        history = await service.export_history(conversation, by=by)
        return history.conversation, checkpoint_jsonl(history.checkpoints, history.content)
    t = await service.transcript(conversation, by=by)
    return t.conversation, markdown_transcript(t.conversation, t.messages, t.sent_from, t.branch)


def _quote_json(args: object) -> list[str]:
    return ["> " + line for line in json.dumps(args, indent=2, ensure_ascii=False).split("\n")]


def markdown_transcript(
    conversation: Conversation,
    messages: Sequence[Message],
    sent_from: int | None = None,
    branch: tuple[int, int] | None = None,
) -> str:
    """The thread's active branch; `sent_from`: where the model's view began on its latest
    call; `branch`: (active branch, number of branches) of a conversation that has several."""
    lines = [
        f"# {conversation.title}",
        "",
        f"- Conversation / thread_id: `{conversation.id}`",
        f"- Created: {iso(conversation.created_at)}",
        f"- Updated: {iso(conversation.updated_at)}",
    ]
    if branch is not None:
        lines.append(f"- Branch: {branch[0]} of {branch[1]} (the active one; the JSONL export has every branch)")
    if conversation.model:
        lines.append(f"- Model: `{conversation.model}`")
    # the models that wrote the answers, here and not in the headings: the contract's
    # `## Assistant` stays as it is (the JSON export has each answer's model)
    answered = dict.fromkeys(m.model for m in messages if isinstance(m, AssistantMessage) and m.model)
    if answered:
        lines.append("- Answered by: " + ", ".join(f"`{model}`" for model in answered))
    if conversation.system:
        lines += ["- System prompt:", ""] + ["  > " + line for line in conversation.system.split("\n")]
    lines.append("")
    for i, m in enumerate(messages):
        if i == sent_from and i > 0:
            lines += ["---", "", "*The model no longer sees the messages above.*", "", "---", ""]
        if isinstance(m, SummaryMessage):
            lines += [f"## Summary of the first {m.covers} messages (written for the model)", ""]
            lines += ["> " + line for line in m.content.split("\n")] + [""]
        elif isinstance(m, UserMessage):
            lines += ["## User", "", m.content, ""]
            # the files by name (their bytes are in the JSON export)
            lines += [f"- Attached: `{a.name}` ({a.media_type}, {a.size:,} bytes)" for a in m.attachments]
            lines += [""] if m.attachments else []
        elif isinstance(m, AssistantMessage):
            lines += ["## Assistant", ""]
            if m.reasoning:
                took = f"Thought for {m.reasoning_seconds:g} s" if m.reasoning_seconds is not None else "Thinking"
                lines += [f"<details><summary>{took}</summary>", "", m.reasoning.strip(), "", "</details>", ""]
            if m.content:
                lines += [m.content, ""]
            for call in m.tool_calls:
                lines += [f"> **Tool call** `{call.name}` ({call.id or '?'})", ">", "> ```json"]
                lines += _quote_json(call.args)
                lines += ["> ```", ""]
        elif isinstance(m, ToolResult):
            lines += [
                f"### Tool result: `{m.name or '?'}` ({m.status or 'success'})",
                "",
                "```",
                m.content,
                "```",
                "",
            ]
    return "\n".join(lines)


def checkpoint_jsonl(
    checkpoints: Iterable[CheckpointSummary], content: Callable[[int], Sequence[Message] | None] | None = None
) -> str:
    """One JSON object per checkpoint, oldest first, newline-terminated ("\\n" when none).

    `content(branch)`: the branch's messages now, to list under `added` the messages a
    checkpoint took in before its last one (a new message rides as pending input, so no
    checkpoint has it as its last message). A branch's messages before a checkpoint's count
    are the ones it had then: a branch only grows."""
    lines: list[str] = []
    counts: dict[int, int] = {}  # branch -> message count of its previous checkpoint
    for c in checkpoints:
        dto = checkpoint_dto(c)
        before = counts.get(c.branch, c.message_count - 1)
        counts[c.branch] = c.message_count
        messages = content(c.branch) if content is not None and c.message_count - before > 1 else None
        if messages is not None and c.message_count <= len(messages) and before >= 0:
            dto["added"] = [message_to_dto(m) for m in messages[before : c.message_count - 1]]
        lines.append(json.dumps(dto, ensure_ascii=False))
    return "\n".join(lines) + "\n"
