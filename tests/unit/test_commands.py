"""The commands the use cases take: valid once built, whichever edge builds them."""

from __future__ import annotations

import pytest

from domain.approvals import Decision, DecisionType
from domain.commands import (
    MAX_MESSAGE,
    Edit,
    Regenerate,
    Resume,
    SendMessage,
    start_command,
)
from domain.errors import InvalidEdit, InvalidInput

CID = "11111111-1111-4111-8111-111111111111"


def test_a_message_over_the_limit_cannot_be_built_even_without_the_parser() -> None:
    SendMessage("x" * MAX_MESSAGE)
    with pytest.raises(InvalidInput, match=f"Message is longer than {MAX_MESSAGE} characters"):
        SendMessage("x" * (MAX_MESSAGE + 1))
    with pytest.raises(InvalidInput, match="longer than"):
        Edit(CID, 0, "x" * (MAX_MESSAGE + 1))
    with pytest.raises(InvalidInput, match="lone surrogate"):
        SendMessage("\ud800")


def test_each_chat_request_names_one_command() -> None:
    assert start_command("  hi  ") == SendMessage("hi")
    assert start_command("hi", CID.upper()) == SendMessage("hi", CID)
    assert start_command(None, CID, resume=True, decision="skip") == Resume(CID, "skip")
    assert start_command("x", CID, edit_of=2) == Edit(CID, 2, "x")
    assert start_command(None, CID, regenerate=True) == Regenerate(CID)
    answer = start_command(None, CID, True, decisions={"c1": {"type": "reject"}})
    assert answer == Resume(CID, None, {"c1": Decision(DecisionType.REJECT)})


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"message": "x" * (MAX_MESSAGE + 1), "decision": 3}, "Message is longer than"),
        ({"message": "hi", "decision": 3}, 'decision must be "retry" or "skip"'),
        ({"message": "hi", "conversation": CID, "resume": True, "regenerate": True}, "cannot be combined"),
        ({"message": "   "}, "Message is required"),
        ({"message": None, "regenerate": True}, "A conversation is required to edit or regenerate"),
        ({"message": "hi", "decision": "maybe"}, 'decision must be "retry" or "skip"'),
        ({"message": "hi", "decisions": {"c": {"type": "approve"}}}, "decisions are given with resume: true"),
        ({"message": None, "resume": True}, "A conversation is required to resume"),
        ({"message": "hi", "conversation": "nope"}, "Invalid Conversation ID"),
    ],
)
def test_a_bad_request_is_refused_by_the_first_rule_it_breaks(kwargs: dict[str, object], error: str) -> None:
    with pytest.raises(InvalidInput, match=error):
        start_command(**kwargs)  # type: ignore[arg-type]


def test_an_edit_index_must_be_an_integer() -> None:
    for bad in ("0", True, 1.0):
        with pytest.raises(InvalidEdit, match="editOf must be a message index"):
            start_command("x", CID, edit_of=bad)
