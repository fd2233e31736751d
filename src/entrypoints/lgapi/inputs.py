"""A LangGraph run request as a Sophos command: a human message is a `SendMessage`, a
`command: {resume: ...}` answers the calls waiting for approval (a `Resume` with their
decisions), a run from an older checkpoint is an edit or a regenerate on a new branch."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from domain.approvals import ApprovalRequest, Decision, DecisionType, parse_decision
from domain.commands import Edit, Regenerate, Resume, SendMessage, StartRun, check_message
from domain.errors import DecisionRequired, InvalidInput, StaleDecision
from domain.model import CheckpointSummary, Message, UserMessage
from domain.queue import Multitask

RUN_FIELDS = frozenset(
    {
        "assistant_id",
        "input",
        "command",
        "stream_mode",
        "stream_subgraphs",
        "stream_resumable",
        "config",
        "context",
        "metadata",
        "checkpoint",
        "checkpoint_id",
        "checkpoint_during",
        "multitask_strategy",
        "if_not_exists",
        "on_disconnect",
        "on_completion",
        "after_seconds",
        "durability",
        "interrupt_before",
        "interrupt_after",
        "webhook",
        "feedback_keys",
        "langsmith_tracer",
        "strict_resume",
    }
)


@dataclass(frozen=True)
class ThreadView:
    """What a run request is checked against: the thread's messages on its active branch,
    the calls waiting for a decision, and its checkpoints."""

    thread_id: str
    messages: Sequence[Message]
    waiting: Sequence[ApprovalRequest]
    pending_calls: int  # tool calls of the last turn without a result
    head_checkpoint: str | None
    log: Sequence[CheckpointSummary]


def needs_thread(body: Mapping[str, Any]) -> bool:
    """Whether the request can only be mapped with the thread read (a resume, a checkpoint, a
    tool message); a plain new message needs no read before its run starts."""
    if body.get("command") is not None or body.get("checkpoint") is not None or body.get("checkpoint_id") is not None:
        return True
    raw = body.get("input")
    messages = raw.get("messages") if isinstance(raw, dict) else None
    if raw is None or messages is None:
        return True  # no input: a resume
    items = messages if isinstance(messages, list) else [messages]
    return any(isinstance(m, dict) and m.get("type", m.get("role")) == "tool" for m in items)


def strategy(body: Mapping[str, Any]) -> Multitask:
    """What a run on a busy thread does (`multitask_strategy`, Sophos's Multitask: reject,
    enqueue, interrupt = steer, rollback); none is LangGraph's default, reject."""
    raw = body.get("multitask_strategy")
    if raw is not None and not (isinstance(raw, str) and raw in Multitask.__members__.values()):
        raise InvalidInput('multitask_strategy must be "reject", "enqueue", "interrupt" or "rollback"')
    return Multitask(raw) if raw is not None else Multitask.REJECT


def check_options(body: Mapping[str, Any]) -> None:
    """Refuse what Sophos does not do (yet), with a clear 400 instead of a silent no."""
    strategy(body)
    for key in ("interrupt_before", "interrupt_after"):
        if body.get(key):
            raise InvalidInput(f"{key} is not supported: tool calls wait for approval by the server's TOOL_APPROVAL")
    if body.get("after_seconds"):
        raise InvalidInput("after_seconds is not supported: runs start at once")
    # `cancel` (what useStream sends by default) is taken as `continue`: a run is durable and
    # goes on when its stream closes (a reload re-joins it); a client stops it with cancel
    if body.get("on_disconnect") not in (None, "continue", "cancel"):
        raise InvalidInput(
            'on_disconnect must be "continue" (or "cancel", taken as continue: a run goes on when its stream is closed)'
        )


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                raise InvalidInput("Only text content is supported in a message")
        return "".join(parts)
    raise InvalidInput("A message's content must be a string or a list of text parts")


def _human_text(raw_input: object, view: ThreadView) -> str | None:
    """The one human message an input carries, or None for no input."""
    if raw_input is None:
        return None
    if not isinstance(raw_input, dict):
        raise InvalidInput("input must be an object with messages")
    unknown = set(raw_input) - {"messages"}
    if unknown:
        # repr: a field name may hold what no UTF-8 answer can carry (a lone surrogate)
        raise InvalidInput(f"Unknown input field(s): {', '.join(sorted(repr(k) for k in unknown))[:200]}")
    raw = raw_input.get("messages")
    if raw is None:
        return None
    messages = [raw] if isinstance(raw, (dict, str)) else raw
    if not isinstance(messages, list):
        raise InvalidInput("input.messages must be a list of messages")
    texts: list[str] = []
    for m in messages:
        if isinstance(m, str):
            texts.append(m)
            continue
        if not isinstance(m, dict):
            raise InvalidInput("Each message must be an object")
        kind = m.get("type", m.get("role"))
        if kind == "tool":
            # a client closing an open call with a made-up result must not decide it
            if view.pending_calls:
                raise DecisionRequired(
                    "A tool call of this thread waits for a decision or has an unknown "
                    "outcome: answer it with command.resume, not with a tool message"
                )
            raise InvalidInput("Tool messages are written by the server only")
        if kind not in ("human", "user"):
            raise InvalidInput("Only human messages may be sent as input")
        texts.append(_text(m.get("content")))
    if len(texts) != 1:
        raise InvalidInput("input.messages must hold exactly one human message")
    text = check_message(texts[0]).strip()
    if not text:
        raise InvalidInput("Message is required")
    return text


def form_args(schema: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments from Agent Inbox's edit form, which sends every field back as text: a
    text that reads exactly as the number or boolean the tool's schema asks for becomes
    that value ("120" for an integer `amount`); anything else is left for the schema check
    to refuse, as an edit from any client is."""
    given = schema.get("properties")
    props: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    out = dict(args)
    for name, value in args.items():
        spec = props.get(name)
        kinds = spec.get("type") if isinstance(spec, Mapping) else None
        kinds = [kinds] if isinstance(kinds, str) else kinds if isinstance(kinds, list) else []
        if not isinstance(value, str) or "string" in kinds:
            continue
        text = value.strip()
        if "integer" in kinds and re.fullmatch(r"-?\d{1,18}", text):
            out[name] = int(text)
        elif "number" in kinds and re.fullmatch(r"-?\d{1,18}(\.\d{1,18})?([eE][-+]?\d{1,3})?", text):
            out[name] = int(text) if re.fullmatch(r"-?\d+", text) else float(text)
        elif "boolean" in kinds and text in ("true", "false"):
            out[name] = text == "true"
    return out


def _decision(raw: object, schema: Mapping[str, Any] | None = None) -> Decision:
    """One answer in the shapes clients send: LangChain's HITL decisions (approve, edit
    with edited_action, reject with message), Agent Inbox's responses (accept, edit with
    args, ignore, response) or Sophos's own."""
    if not isinstance(raw, dict):
        raise InvalidInput("Each decision must be an object with a type")
    kind = raw.get("type")
    if kind in ("approve", "accept") and set(raw) <= {"type", "args"}:
        return Decision(DecisionType.APPROVE)
    if kind == "edit" and isinstance(raw.get("edited_action"), dict):
        args = raw["edited_action"].get("args")
        if not isinstance(args, dict):
            raise InvalidInput("edited_action.args must be an object")
        return Decision(DecisionType.EDIT, dict(args))
    if kind == "edit" and isinstance(raw.get("args"), dict) and isinstance(raw["args"].get("args"), dict):
        return Decision(DecisionType.EDIT, form_args(schema or {}, raw["args"]["args"]))  # Agent Inbox's form
    if kind == "ignore":
        return Decision(DecisionType.REJECT)
    if kind == "response":
        reason = raw.get("args")
        return parse_decision({"type": "reject", "message": reason if isinstance(reason, str) else ""})
    if kind == "reject" and set(raw) <= {"type", "message"}:
        return parse_decision(dict(raw))
    return parse_decision(raw)


def decisions_of(resume: object, waiting: Sequence[ApprovalRequest]) -> dict[str, Decision]:
    """The decisions a `resume` value gives, by tool call id. A list answers the waiting
    calls in order; an object maps call ids to decisions. Nothing waiting, or a count that
    does not match, is a stale answer (409): nothing runs."""
    if not waiting:
        raise StaleDecision("No tool call of this thread waits for a decision")
    if isinstance(resume, dict) and set(resume) == {"decisions"}:
        resume = resume["decisions"]
    if isinstance(resume, list):
        if len(resume) != len(waiting):
            raise StaleDecision(f"{len(waiting)} tool call(s) wait for a decision; {len(resume)} answered")
        return {r.call.id: _decision(d, r.schema) for r, d in zip(waiting, resume, strict=True)}
    if isinstance(resume, dict):
        schemas = {r.call.id: r.schema for r in waiting}
        if not set(resume) <= set(schemas):
            raise StaleDecision("A decision names a tool call that does not wait for one")
        return {str(k): _decision(v, schemas[str(k)]) for k, v in resume.items()}
    raise InvalidInput('command.resume must be a list of decisions or {"decisions": [...]}')


def checkpoint_id(body: Mapping[str, Any]) -> str | None:
    """The checkpoint a run request names (`checkpoint` or `checkpoint_id`), or None."""
    given = body.get("checkpoint_id")
    checkpoint = body.get("checkpoint")
    if isinstance(checkpoint, dict):
        given = checkpoint.get("checkpoint_id", given)
    elif checkpoint is not None:
        raise InvalidInput("checkpoint must be an object with a checkpoint_id")
    if given is not None and not isinstance(given, str):
        raise InvalidInput("checkpoint_id must be a string")
    return given


def run_command(body: Mapping[str, Any], view: ThreadView) -> StartRun:
    """The Sophos command a run request on a thread asks for."""
    check_options(body)
    command = body.get("command")
    if command is not None:
        if not isinstance(command, dict) or set(command) - {"resume"} or "resume" not in command:
            raise InvalidInput("Only command.resume is supported (no update, goto)")
        if body.get("input") not in (None, {}):  # useStream's `submit({}, {command})` sends an empty input
            raise InvalidInput("input and command cannot be combined")
        return Resume(view.thread_id, None, decisions_of(command["resume"], view.waiting))
    text = _human_text(body.get("input"), view)
    checkpoint = checkpoint_id(body)
    if checkpoint is not None and checkpoint != view.head_checkpoint:
        return _from_checkpoint(view, checkpoint, text)
    if text is None:
        return Resume(view.thread_id)
    # a resume, an edit or a regenerate is refused on a busy thread whatever the strategy:
    # it answers or forks the thread as it is, which a run still changes
    return SendMessage(text, view.thread_id, multitask=strategy(body))


def _from_checkpoint(view: ThreadView, checkpoint: str, text: str | None) -> StartRun:
    """A run from an older checkpoint of the active branch: with a message, an edit of the
    user message that followed it; without, a regenerate of the last answer."""
    entry = next((c for c in view.log if c.checkpoint_id == checkpoint), None)
    if entry is None:
        raise InvalidInput("checkpoint names no checkpoint of this thread")
    at = entry.message_count
    if text is not None:
        if at >= len(view.messages) or not isinstance(view.messages[at], UserMessage):
            raise InvalidInput("A message from an older checkpoint replaces the user message that followed it; none does")
        return Edit(view.thread_id, at, text)
    # clients regenerate from the parent of the answer's first checkpoint: after the question,
    # after a tools step, or (when the question was pending input) just before it
    last_user = max((i for i, m in enumerate(view.messages) if isinstance(m, UserMessage)), default=-1)
    if last_user < 0 or not last_user <= at < len(view.messages):
        raise InvalidInput("Only the last answer can be generated again (from a checkpoint after its question)")
    return Regenerate(view.thread_id)
