"""The documented exit codes of the CLI (docs/cli.md), and which error code gives which."""

from __future__ import annotations

from domain.errors import ErrorCode

# the documented exit codes (docs/cli.md)
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_FOUND = 3
EXIT_CONFLICT = 4
EXIT_MODEL = 5
EXIT_SERVER = 6  # `serve`: the address is in use; `--server`: the server cannot be reached
EXIT_WAITING = 7  # the run stopped before tool calls that wait for approval (`sophos approve`)
EXIT_STOPPED = 130  # Ctrl-C (or SIGTERM): the run was stopped, its progress is saved
EXIT_PIPE = 141  # the reader of stdout went away (128 + SIGPIPE), as for other Unix tools

EXIT_CODES = {
    ErrorCode.BAD_REQUEST: EXIT_BAD_INPUT,
    ErrorCode.INVALID_EDIT: EXIT_BAD_INPUT,
    ErrorCode.NOTHING_TO_REGENERATE: EXIT_BAD_INPUT,
    ErrorCode.BRANCH_NOT_FOUND: EXIT_BAD_INPUT,
    ErrorCode.UNKNOWN_MODEL: EXIT_BAD_INPUT,
    ErrorCode.ATTACHMENT_TOO_LARGE: EXIT_BAD_INPUT,
    ErrorCode.ATTACHMENT_TYPE_NOT_ALLOWED: EXIT_BAD_INPUT,
    ErrorCode.ATTACHMENT_UNREADABLE: EXIT_BAD_INPUT,
    ErrorCode.TOO_MANY_ATTACHMENTS: EXIT_BAD_INPUT,
    ErrorCode.MODEL_CANNOT_SEE: EXIT_BAD_INPUT,
    ErrorCode.BAD_GRAPH: EXIT_BAD_INPUT,
    ErrorCode.WEBHOOK_NOT_ALLOWED: EXIT_BAD_INPUT,
    ErrorCode.NOT_FOUND: EXIT_NOT_FOUND,
    ErrorCode.SESSION_IN_PROGRESS: EXIT_CONFLICT,
    ErrorCode.RUN_NOT_RESUMABLE: EXIT_CONFLICT,
    ErrorCode.NO_ACTIVE_RUN: EXIT_CONFLICT,
    ErrorCode.DECISION_REQUIRED: EXIT_CONFLICT,
    ErrorCode.STALE_DECISION: EXIT_CONFLICT,
    ErrorCode.TOOL_OUTCOME_UNKNOWN: EXIT_CONFLICT,
    ErrorCode.QUEUE_FULL: EXIT_CONFLICT,
    ErrorCode.QUEUED_NOT_FOUND: EXIT_NOT_FOUND,
    ErrorCode.USER_EXISTS: EXIT_CONFLICT,
    ErrorCode.USER_LIMIT: EXIT_CONFLICT,
    ErrorCode.QUOTA_EXCEEDED: EXIT_CONFLICT,
    ErrorCode.PRESET_LIMIT: EXIT_CONFLICT,
    ErrorCode.ASSISTANT_EXISTS: EXIT_CONFLICT,
    ErrorCode.ASSISTANT_LIMIT: EXIT_CONFLICT,
    ErrorCode.GRAPH_THREAD: EXIT_CONFLICT,
    ErrorCode.CONVERSATION_EXISTS: EXIT_CONFLICT,
    ErrorCode.MODEL_UNAVAILABLE: EXIT_MODEL,
    ErrorCode.MODEL_UNREACHABLE: EXIT_MODEL,
    ErrorCode.MODEL_BAD_RESPONSE: EXIT_MODEL,
    ErrorCode.ANSWER_TOO_LONG: EXIT_MODEL,
}


def exit_code_of(code: str | None) -> int:
    """The exit code for an error code (a run's, a refusal's or a remote server's)."""
    return EXIT_CODES.get(ErrorCode(code), EXIT_FAILED) if code and code in ErrorCode.__members__ else EXIT_FAILED
