"""A new message on an existing thread is saved as LangGraph's own pending input: the writes
LangGraph saves for a Command's update, under its task id for writes no task made. Both are
private to LangGraph and a stored format; these tests hold ours to LangGraph's."""

from __future__ import annotations

from langchain_core.messages import HumanMessage
from langgraph._internal._constants import NULL_TASK_ID
from langgraph.graph import START
from langgraph.pregel._io import map_command
from langgraph.types import Command

from adapters.langgraph.engine import LangGraphThreads, input_writes
from adapters.langgraph.keys import FIRST_NODE, INPUT_TASK
from adapters.langgraph.rows import input_messages
from tests.support.harness import make_harness


def test_the_input_task_is_langgraphs_null_task_id() -> None:
    assert INPUT_TASK == NULL_TASK_ID


def test_a_pending_input_is_what_langgraph_saves_for_a_command_update() -> None:
    message = HumanMessage("hello", id="m-1")
    ours = [(INPUT_TASK, channel, value) for channel, value in input_writes(message)]
    assert ours == list(map_command(Command(update={"messages": [message]}, goto=FIRST_NODE)))
    assert input_messages(input_writes(message)) == [message]


def test_the_first_node_is_where_start_leads() -> None:
    threads = make_harness().runs.checkpoints
    assert isinstance(threads, LangGraphThreads)
    assert (START, FIRST_NODE) in threads.graph.builder.edges
