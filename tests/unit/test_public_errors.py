"""Public error messages are ours; the raw exception goes to the log with the run."""

from __future__ import annotations

import logging
import sqlite3

import pytest

from domain.errors import UNEXPECTED_MESSAGE
from tests.support.harness import make_harness


async def test_an_unexpected_exception_is_logged_with_the_run_and_never_shown(caplog: pytest.LogCaptureFixture) -> None:
    h = make_harness([sqlite3.OperationalError("no such table: secret_table (/home/alice/x.db)")])
    with caplog.at_level(logging.WARNING):
        started, events = await h.send("go")
    assert events[-1].event == "chat-error"
    assert events[-1].data["code"] == "AGENT_FAILURE" and events[-1].data["message"] == UNEXPECTED_MESSAGE
    summary = await h.conversations.summary(started.conversation_id)
    assert summary.error is not None and summary.error.message == UNEXPECTED_MESSAGE
    assert "secret_table" not in repr(events) and "secret_table" not in repr(summary)
    logged = [r for r in caplog.records if getattr(r, "run_id", None) == started.run_id and r.exc_info]
    assert logged and "secret_table" in str(logged[0].exc_info[1])  # type: ignore[index]
    assert getattr(logged[0], "conversation_id", None) == started.conversation_id
