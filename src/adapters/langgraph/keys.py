"""What the agent graph, its engine and every saver agree on, apart from the graph itself:
a saver imports these names, never `adapters.langgraph.graph` (importing a saver must not
load the agent, its model messages and the use cases it runs), and a run's per-run values
travel in `RunContext`, LangGraph's run context (`Runtime.context`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from domain.models import ModelChoice

# in `configurable`, hence in every checkpoint's metadata (LangGraph copies plain values
# there): which run wrote a checkpoint, as the savers and the fencing read it back. Not
# "run_id": LangGraph reads a matching run_id on the latest checkpoint as re-entry into that
# run and would drop new input
RUN_KEY = "sophos_run_id"
# in `configurable` of a hosted graph's writes (adapters.graphs.runner): the thread's
# checkpoints are all kept, whatever CHECKPOINT_KEEP says, since its history, time travel and a
# rollback read them (Sophos's own threads keep their history in the checkpoint log instead)
KEEP_ALL_KEY = "sophos_keep_all"
# LangGraph's NULL_TASK_ID (private in langgraph, and a stored format: every saver's writes
# table holds it): writes no task made, applied to the checkpoint they are saved on when a
# run resumes from it, as a Command's are. tests/unit/test_pending_input.py holds it to
# LangGraph's own value and mapping.
INPUT_TASK = "00000000-0000-0000-0000-000000000000"
FIRST_NODE = "agent"  # where START leads: a pending input's next step


@dataclass(frozen=True)
class RunContext:
    """The graph's `context_schema`: what one run's nodes use that is not in the thread.

    `choice`: the model, system prompt and context size of the run's model calls (never
    stored in a checkpoint: a system prompt has no place in every one; a run resumed after a
    crash gets the same choice again from the conversation's stored settings). `skip`: tool
    call ids not to run again (their outcome was unknown and the user chose Skip). `run_id`:
    the run, for the tool journal and logs (the checkpoints get it from RUN_KEY). `resumed`:
    the run continues the turn of the run before it (a resume, not a new message or a fork):
    its trace spans join that run's trace."""

    run_id: str | None = None
    choice: ModelChoice = field(default_factory=ModelChoice)
    skip: frozenset[str] = frozenset()
    resumed: bool = False
