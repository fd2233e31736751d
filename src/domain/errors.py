"""Error codes and domain errors.

Every expected failure is a named exception carrying the contract's error code, so the
entrypoints translate them once (HTTP status table, CLI exit codes) and never guess.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum


class ErrorCode(StrEnum):
    BAD_REQUEST = "BAD_REQUEST"
    NOT_FOUND = "NOT_FOUND"
    SESSION_IN_PROGRESS = "SESSION_IN_PROGRESS"
    RUN_NOT_RESUMABLE = "RUN_NOT_RESUMABLE"
    NO_ACTIVE_RUN = "NO_ACTIVE_RUN"
    DECISION_REQUIRED = "DECISION_REQUIRED"
    STALE_DECISION = "STALE_DECISION"
    SHUTTING_DOWN = "SHUTTING_DOWN"
    MODEL_UNAVAILABLE = "MODEL_UNAVAILABLE"
    MODEL_UNREACHABLE = "MODEL_UNREACHABLE"
    MODEL_BAD_RESPONSE = "MODEL_BAD_RESPONSE"
    ANSWER_TOO_LONG = "ANSWER_TOO_LONG"
    RECURSION_LIMIT = "RECURSION_LIMIT"
    AGENT_FAILURE = "AGENT_FAILURE"
    INPUT_NOT_RECORDED = "INPUT_NOT_RECORDED"
    STORAGE_FAILURE = "STORAGE_FAILURE"
    RUN_LOST = "RUN_LOST"
    ADOPTION_FAILED = "ADOPTION_FAILED"
    TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"
    NOT_SUPPORTED = "NOT_SUPPORTED"
    INVALID_EDIT = "INVALID_EDIT"
    NOTHING_TO_REGENERATE = "NOTHING_TO_REGENERATE"
    BRANCH_NOT_FOUND = "BRANCH_NOT_FOUND"
    UNKNOWN_MODEL = "UNKNOWN_MODEL"
    SEARCH_BUSY = "SEARCH_BUSY"
    PDF_BUSY = "PDF_BUSY"
    TOO_MANY_ATTEMPTS = "TOO_MANY_ATTEMPTS"
    QUEUE_FULL = "QUEUE_FULL"
    QUEUED_NOT_FOUND = "QUEUED_NOT_FOUND"
    USER_EXISTS = "USER_EXISTS"
    CONVERSATION_EXISTS = "CONVERSATION_EXISTS"
    USER_LIMIT = "USER_LIMIT"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
    FORBIDDEN = "FORBIDDEN"
    PRESET_LIMIT = "PRESET_LIMIT"
    ATTACHMENT_TOO_LARGE = "ATTACHMENT_TOO_LARGE"
    ATTACHMENT_TYPE_NOT_ALLOWED = "ATTACHMENT_TYPE_NOT_ALLOWED"
    ATTACHMENT_UNREADABLE = "ATTACHMENT_UNREADABLE"
    TOO_MANY_ATTACHMENTS = "TOO_MANY_ATTACHMENTS"
    MODEL_CANNOT_SEE = "MODEL_CANNOT_SEE"
    BAD_GRAPH = "BAD_GRAPH"
    ASSISTANT_EXISTS = "ASSISTANT_EXISTS"
    ASSISTANT_LIMIT = "ASSISTANT_LIMIT"
    GRAPH_THREAD = "GRAPH_THREAD"
    WEBHOOK_NOT_ALLOWED = "WEBHOOK_NOT_ALLOWED"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class SophosError(Exception):
    """Base of every expected failure; carries a contract error code."""

    code: ErrorCode = ErrorCode.UNKNOWN_ERROR
    default_message = "Unknown error"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.default_message)

    @property
    def message(self) -> str:
        return str(self.args[0])


class InvalidInput(SophosError):
    """Raised when a request or command argument is malformed."""

    code = ErrorCode.BAD_REQUEST
    default_message = "Bad request"


class InvalidImport(InvalidInput):
    """Raised when a file to import is malformed, too large, or not a format Sophos reads."""

    default_message = "The file is not a conversation export Sophos can import"


class InvalidEdit(InvalidInput):
    """Raised when editOf names no message of the active branch, or not a user message."""

    code = ErrorCode.INVALID_EDIT
    default_message = "editOf must be the index of a user message of the conversation"


class NothingToRegenerate(InvalidInput):
    """Raised when a regenerate is asked for a conversation with no user message."""

    code = ErrorCode.NOTHING_TO_REGENERATE
    default_message = "Nothing to regenerate: the conversation has no user message"


class BranchNotFound(InvalidInput):
    """Raised when a branch switch names no branch of the conversation."""

    code = ErrorCode.BRANCH_NOT_FOUND
    default_message = "activeBranch must be the number of a branch of the conversation"


class UnknownModel(InvalidInput):
    """Raised when a request names a model the model server does not list."""

    code = ErrorCode.UNKNOWN_MODEL
    default_message = "The model server has no such model"


class AttachmentTooLarge(InvalidInput):
    """Raised when an attached file is larger than MAX_ATTACHMENT_BYTES."""

    code = ErrorCode.ATTACHMENT_TOO_LARGE
    default_message = "The attached file is too large"


class AttachmentTypeNotAllowed(InvalidInput):
    """Raised when an attached file is of a type Sophos does not accept."""

    code = ErrorCode.ATTACHMENT_TYPE_NOT_ALLOWED
    default_message = "Sophos does not accept this type of file"


class AttachmentUnreadable(InvalidInput):
    """Raised when an attached file is not what its type says (a broken image, a PDF
    whose text cannot be read, a text file that is not UTF-8) or is malformed."""

    code = ErrorCode.ATTACHMENT_UNREADABLE
    default_message = "The attached file cannot be read"


class TooManyAttachments(InvalidInput):
    """Raised when a message carries more than MAX_ATTACHMENTS files."""

    code = ErrorCode.TOO_MANY_ATTACHMENTS
    default_message = "Too many attached files"


class ModelCannotSee(InvalidInput):
    """Raised when a message carries an image and its model does not report vision."""

    code = ErrorCode.MODEL_CANNOT_SEE
    default_message = "The model cannot read images"


class AttachmentNotFound(SophosError):
    """Raised when a conversation holds no file with the digest asked for."""

    code = ErrorCode.NOT_FOUND
    default_message = "Attachment not found"


class ConversationNotFound(SophosError):
    """Raised when a conversation id names no conversation."""

    code = ErrorCode.NOT_FOUND
    default_message = "Conversation Not Found"


class SessionInProgress(SophosError):
    """Raised when a conversation already has an active run (in any process)."""

    code = ErrorCode.SESSION_IN_PROGRESS
    default_message = "Previous request still in progress"


class RunNotResumable(SophosError):
    """Raised when a resume is asked for a thread with no pending work."""

    code = ErrorCode.RUN_NOT_RESUMABLE
    default_message = "Nothing to resume: the last run finished"


class DecisionRequired(SophosError):
    """Raised when a resume would re-run an unsafe tool call whose outcome is unknown."""

    code = ErrorCode.DECISION_REQUIRED
    default_message = (
        "A destructive tool call was in flight when the run stopped and may have taken effect: "
        'resume with decision "retry" or "skip"'
    )


class StaleDecision(SophosError):
    """Raised when a decision names a tool call that is not waiting for it (answered
    already, from a stale page or a double click): nothing is stored, nothing runs."""

    code = ErrorCode.STALE_DECISION
    default_message = "That tool call is not waiting for a decision (it was answered already)"


class AllowRuleNotFound(SophosError):
    """Raised when a revoke names a tool that is not always allowed."""

    code = ErrorCode.NOT_FOUND
    default_message = "No always-allow rule for that tool"


class ToolOutcomeUnknown(SophosError):
    """Raised when a tool server stops during a call that is unsafe to send again."""

    code = ErrorCode.TOOL_OUTCOME_UNKNOWN
    default_message = (
        "The tool server stopped during the call, so it may or may not have taken effect: "
        'resume the conversation with decision "retry" or "skip"'
    )


class InvalidTransition(SophosError):
    """Raised when a run status change is not in the lifecycle's transition table."""

    default_message = "Invalid run status transition"


class StorageFailure(SophosError):
    """Raised when the database cannot be written (disk full, read-only, I/O error)."""

    code = ErrorCode.STORAGE_FAILURE
    default_message = "The database could not be written"


class RunLost(SophosError):
    """Raised when a process writes for a run it no longer owns (its lease expired and
    another process took the run over): the write is refused and the local task stops."""

    code = ErrorCode.RUN_LOST
    default_message = (
        "This process lost the run: it was paused past its lease and another process took "
        "the conversation over. Nothing more was written by this process."
    )


class NoActiveRun(SophosError):
    """Raised when a cancel names a conversation with no active run."""

    code = ErrorCode.NO_ACTIVE_RUN
    default_message = "No run is active for this conversation"


class ShuttingDown(SophosError):
    """Raised when a run is asked for while the process drains for shutdown."""

    code = ErrorCode.SHUTTING_DOWN
    default_message = "The server is shutting down; try again shortly"


class ModelUnavailable(SophosError):
    """Raised when the model server answers but does not have the configured model."""

    code = ErrorCode.MODEL_UNAVAILABLE
    default_message = "The configured model is not available."


class ModelUnreachable(SophosError):
    """Raised when the model server does not answer, refuses the connection or times out."""

    code = ErrorCode.MODEL_UNREACHABLE
    default_message = "The model server could not be reached."


class ModelBadResponse(SophosError):
    """Raised when the model server sends what Sophos will not read: a response past a bound
    (head, line, inflated size) or not in the format its API promises."""

    code = ErrorCode.MODEL_BAD_RESPONSE
    default_message = "The model server sent a response Sophos could not read."


class AnswerTooLong(SophosError):
    """Raised when the model's answer reaches MODEL_MAX_TOKENS: it was stopped there, and
    the text so far is kept in the conversation."""

    code = ErrorCode.ANSWER_TOO_LONG
    default_message = (
        "The answer reached the token limit (MODEL_MAX_TOKENS) and was stopped there; the text "
        "so far is kept. Ask for a shorter answer, or raise MODEL_MAX_TOKENS."
    )


class RecursionLimitReached(SophosError):
    """Raised when a run exceeds AGENT_RECURSION_LIMIT steps."""

    code = ErrorCode.RECURSION_LIMIT
    default_message = "The agent reached its step limit (AGENT_RECURSION_LIMIT) without finishing."


class AgentFailure(SophosError):
    """Raised when the agent fails for any other reason (a node raised, a write failed)."""

    code = ErrorCode.AGENT_FAILURE
    default_message = "Agent failed"


UNEXPECTED_MESSAGE = "The agent failed unexpectedly (the details are in the server log)"


def to_chat_error(exc: BaseException) -> tuple[ErrorCode, str]:
    """Map any exception escaping a run onto (code, message), as the contract's toChatError.
    An unexpected exception's own text (a path, a SQL statement, a Python error) is never
    the public message: it is logged with the run, the message is ours."""
    if isinstance(exc, SophosError):
        return exc.code, exc.message
    return ErrorCode.AGENT_FAILURE, UNEXPECTED_MESSAGE


class SearchBusy(SophosError):
    """Raised when too many searches wait already: one more is refused, not queued."""

    code = ErrorCode.SEARCH_BUSY
    default_message = "Too many searches are running; try again shortly"


class PdfBusy(SophosError):
    """Raised when every PDF reader stays busy for as long as one file may take to read
    (PDF_TIMEOUT), or none can be started: the file is refused, not queued longer."""

    code = ErrorCode.PDF_BUSY
    default_message = "Too many PDFs are being read; try again shortly"


class NotSupported(SophosError):
    """Raised when the configured backend does not offer a feature (yet)."""

    code = ErrorCode.NOT_SUPPORTED
    default_message = "Not supported by the configured backend"


class TooManyAttempts(SophosError):
    """Raised when a client address has failed to give the API token too often lately."""

    code = ErrorCode.TOO_MANY_ATTEMPTS
    default_message = "Too many failed logins from this address; wait before trying again"

    def __init__(self, retry_after: int) -> None:
        super().__init__()
        self.retry_after = retry_after  # whole seconds until one more attempt is allowed


class QueueFull(SophosError):
    """Raised when a message is queued on a conversation whose queue already holds
    MAX_QUEUED messages."""

    code = ErrorCode.QUEUE_FULL
    default_message = "Too many queued messages on this conversation: wait for some to be answered"


class QueuedNotFound(SophosError):
    """Raised when an edit or a drop names no waiting message of the conversation's queue
    (unknown, or already started)."""

    code = ErrorCode.QUEUED_NOT_FOUND
    default_message = "No such queued message (it may have started already)"


class UserNotFound(SophosError):
    """Raised when a user (by name or id) or an API token (by id) does not exist."""

    code = ErrorCode.NOT_FOUND
    default_message = "No such user or token"


class ConversationExists(SophosError):
    """Raised when a conversation is made under an id that is taken, whoever holds it: ids
    are global, so the answer tells that the id is taken and never whose it is."""

    code = ErrorCode.CONVERSATION_EXISTS
    default_message = "Thread already exists"


class UserExists(SophosError):
    """Raised when a user is added under a name another user has."""

    code = ErrorCode.USER_EXISTS
    default_message = "A user with that name exists already"


class UserLimitReached(SophosError):
    """Raised when a user who already has USER_MAX_ACTIVE_RUNS runs going or messages
    queued starts or queues another."""

    code = ErrorCode.USER_LIMIT
    default_message = "You have too many runs going or messages queued: wait for some to finish"


class ScheduleNotFound(SophosError):
    """Raised when a schedule does not exist or is another user's (404 alike)."""

    code = ErrorCode.NOT_FOUND
    default_message = "Schedule not found"


class FiringTaken(SophosError):
    """Raised when a firing's claim finds it started by another process (or the schedule
    changed meanwhile): nothing was stored; the caller moves on."""

    code = ErrorCode.SESSION_IN_PROGRESS
    default_message = "The firing was started elsewhere"


class QuotaExceeded(SophosError):
    """Raised when a user who used USER_DAILY_TOKENS tokens today (UTC) starts a run or
    their run reaches its next model call; `reset_at` is the next UTC midnight."""

    code = ErrorCode.QUOTA_EXCEEDED

    def __init__(self, reset_at: datetime) -> None:
        super().__init__(f"Daily token quota used up (USER_DAILY_TOKENS); it resets at {reset_at:%Y-%m-%d %H:%M} UTC")
        self.reset_at = reset_at


class Forbidden(SophosError):
    """Raised when a user who is not an admin asks for what only an admin may see."""

    code = ErrorCode.FORBIDDEN
    default_message = "Only an admin may do this"


class PresetNotFound(SophosError):
    """Raised when a user deletes a preset they do not have."""

    code = ErrorCode.NOT_FOUND
    default_message = "No such preset"


class TooManyPresets(SophosError):
    """Raised when a user saves a new preset while they have PRESETS_MAX already."""

    code = ErrorCode.PRESET_LIMIT
    default_message = "Too many presets: delete one first"


class MemoryNotFound(SophosError):
    """Raised when a memory id names none of the user's memories (another user's included)."""

    code = ErrorCode.NOT_FOUND
    default_message = "No such memory"
