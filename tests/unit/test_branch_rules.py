"""The branch rules as plain functions: where a branch hangs, which messages have
alternatives, what an edit or a regenerate may fork."""

from __future__ import annotations

import pytest

from domain.branches import (
    NOT_RUN,
    Branch,
    BranchMarker,
    edit_fork,
    fork_messages,
    fork_parent,
    fork_title,
    markers,
    regenerate_fork,
)
from domain.errors import InvalidEdit, NothingToRegenerate
from domain.model import AssistantMessage, ToolCall, ToolResult, UserMessage


def b(number: int, parent: int | None, fork: int, count: int, active: bool = False) -> Branch:
    return Branch(number, parent, fork, count, active)


def test_a_branch_forked_at_the_same_place_again_is_a_sibling_not_a_child() -> None:
    tree = [b(1, None, 0, 4), b(2, 1, 2, 4, active=True)]
    assert fork_parent(tree, 2, 2) == 1  # edit message 2 again, from branch 2
    assert fork_parent(tree, 2, 3) == 2  # its answer: branch 2's own message
    assert fork_parent(tree, 2, 0) is None  # the first message: a new root


def test_markers_show_the_alternatives_at_each_fork_of_the_active_lineage() -> None:
    tree = [b(1, None, 0, 4), b(2, 1, 2, 4), b(3, 2, 3, 4, active=True), b(4, None, 0, 2)]
    assert markers(tree, 4) == {
        0: BranchMarker(1, 2, (1, 4)),
        2: BranchMarker(2, 2, (1, 2)),
        3: BranchMarker(2, 2, (2, 3)),
    }
    switched = [b(1, None, 0, 4, active=True), b(2, 1, 2, 4), b(3, 2, 3, 4), b(4, None, 0, 2)]
    assert markers(switched, 4) == {0: BranchMarker(1, 2, (1, 4)), 2: BranchMarker(1, 2, (1, 2))}
    assert markers([], 4) == {}


def test_a_parent_without_a_message_at_the_fork_is_no_alternative() -> None:
    tree = [b(1, None, 0, 1), b(2, 1, 1, 2, active=True)]  # branch 1 had no answer yet
    assert markers(tree, 2) == {}


def test_only_a_user_message_can_be_edited_and_regenerate_needs_one() -> None:
    thread = (UserMessage("q"), AssistantMessage("a"), UserMessage("q2"))
    assert edit_fork(thread, 2) == 2 and regenerate_fork(thread) == 3
    for bad in (1, 3, -1, "0", True, None):
        with pytest.raises(InvalidEdit):
            edit_fork(thread, bad)
    with pytest.raises(NothingToRegenerate):
        regenerate_fork((AssistantMessage("hello"),))


def test_a_fork_keeps_the_messages_up_to_its_point_and_answers_what_was_left_pending() -> None:
    calls = (ToolCall("a", "t__x", {}), ToolCall("b", "t__y", {}))
    thread = [UserMessage("go"), AssistantMessage("", calls), ToolResult("x done", "a", "t__x"), AssistantMessage("done")]
    assert fork_messages(thread, 0) == (thread[0],)
    assert fork_messages(thread, 3) == tuple(thread)
    kept = fork_messages(thread, 1)  # b never had a result: the fork says so instead of running it
    assert kept[:3] == tuple(thread[:3]) and kept[3] == ToolResult(NOT_RUN, "b", "t__y", "error")
    assert fork_title("x" * 300).endswith(" (fork)") and len(fork_title("x" * 300)) == 200
