"""The audit log (issue 47 item 4): who did what, when and from where. Rows are appended,
never changed; only the retention (AUDIT_RETENTION_DAYS) removes the oldest."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class Action(StrEnum):
    """What was done. Stored as text: a name, once written, stays."""

    LOGIN = "login"
    LOGIN_FAILED = "login.failed"
    USER_ADDED = "user.added"
    USER_DISABLED = "user.disabled"
    USER_ENABLED = "user.enabled"
    USER_CLAIMED = "user.claimed"
    USER_DELETED = "user.delete"
    TOKEN_ISSUED = "token.issued"
    TOKEN_REVOKED = "token.revoked"
    EXPORT = "export"
    IMPORT = "import"
    APPROVAL = "approval"
    ALLOW_ALWAYS = "rule.added"
    RULE_REVOKED = "rule.revoked"
    CONVERSATION_DELETED = "conversation.deleted"
    SETTINGS_CHANGED = "settings.changed"
    PRESET_SAVED = "preset.saved"
    PRESET_DELETED = "preset.deleted"
    QUEUED_DROPPED = "queue.dropped"  # a queued message deleted before its run
    DB_PRUNED = "db.pruned"  # `sophos db prune`: old checkpoints deleted
    STATE_UPDATED = "state.updated"  # a hosted graph's thread state written (POST /threads/{id}/state)


@dataclass(frozen=True)
class Caller:
    """Who acts and from where: the user's name and the client's address for HTTP,
    `cli:<os user>` for this machine's commands."""

    actor: str
    origin: str


UNKNOWN_CALLER = Caller("unknown", "unknown")


@dataclass(frozen=True)
class AuditEntry:
    """One row: `seq` orders rows as they were appended (0 before it is stored); `target`
    names what was acted on (a user, a token id, a conversation id, a tool); `detail` is a
    short free text (a decision, a count)."""

    at: datetime
    actor: str
    action: str
    origin: str
    target: str = ""
    detail: str = ""
    seq: int = 0


MAX_FIELD = 500  # characters kept of a field: a hostile name or header costs a bounded row


def clipped(text: str) -> str:
    return text if len(text) <= MAX_FIELD else text[: MAX_FIELD - 1] + "…"


def changed_fields(before: object, after: object) -> str:
    """The names of the fields two values of one dataclass differ in (`model, system`): what
    a settings row says changed, never the values (a system prompt may be long or private)."""
    names = [f.name for f in dataclasses.fields(before)] if dataclasses.is_dataclass(before) else []
    return ", ".join(n for n in names if getattr(before, n) != getattr(after, n))
