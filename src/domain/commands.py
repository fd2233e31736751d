"""What the use cases take: one frozen command per operation, valid once built.

The edges (HTTP, CLI) turn what a person sent into a command with `start_command` and the
other parsers here, so a limit (message size, title length) is refused the same way by
every edge: the checks live in the commands themselves, not in a route. (A rename or a delete
names only a conversation and a title: the use case checks those itself, with
`parse_conversation_id` and `clean_title`.)"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from domain.approvals import Decision, parse_decisions
from domain.attachments import Upload
from domain.errors import InvalidEdit, InvalidInput
from domain.model import check_text, parse_conversation_id
from domain.models import SettingsChange
from domain.queue import Multitask, parse_multitask

MAX_MESSAGE = 32_000  # characters, for every edge

UnknownOutcome = Literal["retry", "skip"]  # the old field: one answer for every unknown outcome


def check_message(text: str) -> str:
    """`text` unchanged, or InvalidInput when it is longer than MAX_MESSAGE characters or
    holds a lone surrogate."""
    if len(text) > MAX_MESSAGE:
        raise InvalidInput(f"Message is longer than {MAX_MESSAGE} characters")
    return check_text(text, "Message")


@dataclass(frozen=True)
class SendMessage:
    """A user message, on `conversation_id` or (None) on a new conversation. `multitask`:
    what it does when the conversation has an active (or waiting) run (domain.queue)."""

    text: str
    conversation_id: str | None = None
    settings: SettingsChange = SettingsChange()
    multitask: Multitask = Multitask.REJECT
    files: tuple[Upload, ...] = ()  # checked where they were read (domain.attachments.AttachmentLimits)
    temporary: bool = False  # a new conversation that is not kept (domain.organise)
    webhook: str | None = None  # called when its run ends (domain.webhooks; checked by the edge's service)

    def __post_init__(self) -> None:
        check_message(self.text)
        if not self.text.strip() and not self.files:
            raise InvalidInput("Message is required")
        if self.temporary and self.conversation_id is not None:
            raise InvalidInput("temporary applies to a new conversation")
        if self.files and self.multitask is not Multitask.REJECT:
            raise InvalidInput("A message with attachments cannot be queued: send it once the run has finished")


@dataclass(frozen=True)
class Resume:
    """Continue the conversation's interrupted or waiting run, with the decisions it needs."""

    conversation_id: str
    decision: UnknownOutcome | None = None
    decisions: Mapping[str, Decision] = field(default_factory=dict)
    settings: SettingsChange = SettingsChange()


@dataclass(frozen=True)
class Edit:
    """Replace user message `index` with `text` on a new branch, and answer it."""

    conversation_id: str
    index: int
    text: str
    settings: SettingsChange = SettingsChange()

    def __post_init__(self) -> None:
        check_message(self.text)
        if not self.text.strip():
            raise InvalidInput("Message is required")


@dataclass(frozen=True)
class Regenerate:
    """Answer the last user message again, on a new branch."""

    conversation_id: str
    settings: SettingsChange = SettingsChange()


StartRun = SendMessage | Resume | Edit | Regenerate


@dataclass(frozen=True)
class Cancel:
    conversation_id: str


def start_command(
    message: object,
    conversation: object = None,
    resume: bool = False,
    decision: object = None,
    edit_of: object = None,
    regenerate: bool = False,
    decisions: object = None,
    settings: SettingsChange = SettingsChange(),  # noqa: B008 - a frozen value
    multitask: object = None,
    files: tuple[Upload, ...] = (),
    temporary: object = False,
) -> StartRun:
    """The command a chat request names, checked in the API contract's order (the first
    failing rule's InvalidInput is the one reported). `settings`: the model and system
    prompt the request asks for, applied to the conversation before the run. `temporary`:
    a new conversation that is not kept."""
    text = message if isinstance(message, str) else None
    if not resume and text is not None:
        check_message(text)
    if decision is not None and not isinstance(decision, str):
        raise InvalidInput('decision must be "retry" or "skip"')
    text = check_text(text, "Message").strip() if text is not None else ""
    if sum((resume, edit_of is not None, regenerate)) > 1:
        raise InvalidInput("resume, editOf and regenerate cannot be combined")
    if not resume and not regenerate and not text and not (files and edit_of is None):
        raise InvalidInput("Message is required")
    if files and (resume or regenerate or edit_of is not None):
        raise InvalidInput("attachments go with a new message, not with resume, editOf or regenerate")
    if (edit_of is not None or regenerate) and conversation is None:
        raise InvalidInput("A conversation is required to edit or regenerate")
    if decision is not None and decision not in ("retry", "skip"):
        raise InvalidInput('decision must be "retry" or "skip"')
    answers = parse_decisions(decisions)
    if answers and not resume:
        raise InvalidInput("decisions are given with resume: true")
    strategy = parse_multitask(multitask)
    if strategy is not Multitask.REJECT and (resume or regenerate or edit_of is not None):
        raise InvalidInput("multitask applies to a new message, not to resume, editOf or regenerate")
    if not isinstance(temporary, bool):
        raise InvalidInput("temporary must be true or false")
    if conversation is None:
        if resume:
            raise InvalidInput("A conversation is required to resume")
        return SendMessage(text, None, settings, strategy, files, temporary)
    if temporary:
        raise InvalidInput("temporary applies to a new conversation")
    cid = parse_conversation_id(conversation)
    if resume:
        return Resume(cid, "retry" if decision == "retry" else "skip" if decision == "skip" else None, answers, settings)
    if regenerate:
        return Regenerate(cid, settings)
    if edit_of is not None:
        if isinstance(edit_of, bool) or not isinstance(edit_of, int):
            raise InvalidEdit("editOf must be a message index (an integer)")
        return Edit(cid, edit_of, text, settings)
    return SendMessage(text, cid, settings, strategy, files)


def with_webhook(command: StartRun, url: str) -> SendMessage:
    """The command with a webhook (a checked URL): only a new message's run names one."""
    if not isinstance(command, SendMessage):
        raise InvalidInput("webhook goes with a new message, not with resume, editOf or regenerate")
    return replace(command, webhook=url)
