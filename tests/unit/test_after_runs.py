"""What follows a run (services.after_runs) against in-memory adapters and a scripted model:
the title the model writes after the first answer, never over a person's, the first line
when titles are off, turn counts, and temporary conversations deleted once left."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from adapters.memory.model import ScriptedModel
from adapters.memory.runs import InMemoryRunStore
from adapters.memory.usage import InMemoryUsageStore
from domain.errors import ModelUnreachable
from domain.lifecycle import Outcome
from domain.model import (
    NEW_CONVERSATION_TITLE,
    AssistantMessage,
    Run,
    RunStatus,
    TitleSource,
    ToolCall,
    ToolResult,
    UserMessage,
    new_id,
)
from domain.organise import TITLE_SYSTEM, model_title, title_request
from domain.principals import BOOTSTRAP_ID
from ports.runs import RunFinish
from services.after_runs import AfterRuns
from services.hub import ActiveRun
from services.usage import UsageMeter
from tests.support.fake_engine import FakeEngine, Thread

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
CHAT = [
    UserMessage("tell me about lighthouses"),
    AssistantMessage("", (ToolCall("c1", "search", {"q": "x"}),)),
    ToolResult("towers", "c1", "search"),
    AssistantMessage("Lighthouses guide ships at night."),
]


async def world(
    title: str = "tell me about lighthouses",
    auto_title: bool = True,
    replies: list[object] | None = None,
    messages: list[object] | None = None,
) -> tuple[AfterRuns, InMemoryRunStore, ScriptedModel, str]:
    store = InMemoryRunStore()
    engine = FakeEngine(store)
    model = ScriptedModel(list(replies if replies is not None else ["Lighthouse history"]))  # type: ignore[arg-type]
    cid = new_id()
    await store.create_conversation(cid, title, T0)
    engine.threads[cid] = Thread(messages=list(messages if messages is not None else CHAT))  # type: ignore[arg-type]
    return AfterRuns(store, engine, lambda: model, auto_title, clock=lambda: T0), store, model, cid


async def test_the_model_titles_a_conversation_after_its_first_answer_with_the_documented_request() -> None:
    after, store, model, cid = await world()
    await after.follow_up(cid, RunStatus.COMPLETED)
    conv = await store.get_conversation(cid)
    assert conv is not None and (conv.title, conv.title_by, conv.turns) == ("Lighthouse history", TitleSource.MODEL, 1)
    assert conv.updated_at == T0  # a title written afterwards does not move it up the list
    [asked] = model.seen
    assert asked.system == TITLE_SYSTEM and asked.tools == () and asked.model is None
    assert asked.messages == (
        UserMessage("User: tell me about lighthouses\n\nAssistant: Lighthouses guide ships at night.\n\nTitle:"),
    )
    # the next answers ask for no title
    await after.follow_up(cid, RunStatus.COMPLETED)
    assert len(model.seen) == 1


async def test_a_title_a_person_gave_is_never_replaced_even_one_given_while_the_model_wrote() -> None:
    after, store, model, cid = await world()
    await store.rename_conversation(cid, "My lighthouses", T0)
    await after.follow_up(cid, RunStatus.COMPLETED)
    assert model.seen == []  # not even asked

    after, store, model, cid = await world()
    renamed = store.rename_conversation(cid, "Mine", T0)

    class Renaming(ScriptedModel):
        async def stream(self, *args, **kwargs):  # type: ignore[no-untyped-def, override]
            await renamed  # the person renames while the model writes
            async for out in super().stream(*args, **kwargs):
                yield out

    slow = Renaming(["Lighthouse history"])
    after.model = lambda: slow
    await after.follow_up(cid, RunStatus.COMPLETED)
    conv = await store.get_conversation(cid)
    assert conv is not None and (conv.title, conv.title_by) == ("Mine", TitleSource.USER)
    assert len(slow.seen) == 1


async def test_a_model_that_fails_leaves_the_title_and_only_a_log_line() -> None:
    after, store, _, cid = await world(replies=[ModelUnreachable("down")])
    await after.follow_up(cid, RunStatus.COMPLETED)
    conv = await store.get_conversation(cid)
    assert conv is not None and (conv.title, conv.title_by, conv.turns) == ("tell me about lighthouses", TitleSource.MESSAGE, 1)


async def test_without_auto_titles_a_placeholder_title_becomes_the_first_line() -> None:
    after, store, model, cid = await world(title=NEW_CONVERSATION_TITLE, auto_title=False)
    await after.follow_up(cid, RunStatus.COMPLETED)
    conv = await store.get_conversation(cid)
    assert conv is not None and (conv.title, conv.title_by) == ("tell me about lighthouses", TitleSource.MESSAGE)
    assert model.seen == []


async def test_no_title_is_asked_before_an_answer_with_text_or_after_a_failed_run() -> None:
    after, _, model, cid = await world(messages=CHAT[:3])
    await after.follow_up(cid, RunStatus.COMPLETED)
    after2, _, model2, cid2 = await world()
    await after2.follow_up(cid2, RunStatus.FAILED)
    assert model.seen == model2.seen == []


async def test_a_temporary_conversation_left_by_its_page_goes_when_its_run_ends_and_is_never_titled() -> None:
    store = InMemoryRunStore()
    engine = FakeEngine(store)
    model = ScriptedModel(["Title"])
    after = AfterRuns(store, engine, lambda: model, clock=lambda: T0 + timedelta(minutes=5))
    kept, temporary = new_id(), new_id()
    await store.create_conversation(kept, "kept", T0)
    await store.create_conversation(temporary, "gone", T0, temporary=True)
    engine.threads[temporary] = Thread(messages=list(CHAT))  # type: ignore[arg-type]
    run = Run(new_id(), temporary, RunStatus.RUNNING, T0)
    await store.start_run(run, T0)
    assert await store.leave_temporary(temporary)
    assert await after.sweep() == 0  # its run is going
    await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, T0))
    await after.follow_up(temporary, RunStatus.COMPLETED)
    assert await store.get_conversation(temporary) is None and temporary not in engine.threads
    assert await store.get_conversation(kept) is not None and model.seen == []


async def test_a_temporary_conversation_nobody_used_for_a_day_is_swept() -> None:
    store = InMemoryRunStore()
    engine = FakeEngine(store)
    temporary = new_id()
    await store.create_conversation(temporary, "t", T0, temporary=True)
    assert await AfterRuns(store, engine, ScriptedModel, clock=lambda: T0 + timedelta(hours=23)).sweep() == 0
    assert await AfterRuns(store, engine, ScriptedModel, clock=lambda: T0 + timedelta(hours=25)).sweep() == 1
    assert await store.get_conversation(temporary) is None


def test_a_models_answer_is_made_a_short_title() -> None:
    assert model_title('"Lighthouse history."') == "Lighthouse history"
    assert model_title("<think>hmm, lighthouses</think>\n\n**Title: Lighthouses at night!**\nmore") == "Lighthouses at night"
    assert model_title("one two three four five six seven eight nine ten") == "one two three four five six seven eight"
    assert model_title("  \n\u202e\n") is None
    assert len(model_title("x" * 500) or "") <= 51
    assert title_request([UserMessage("hi")]) is None
    system, text = title_request([UserMessage("a" * 5000), AssistantMessage("b")]) or ("", "")
    assert system == TITLE_SYSTEM and len(text) < 1600


async def test_a_titles_model_call_counts_in_the_owners_usage_estimated_when_the_server_gave_no_counts() -> None:
    after, store, model, cid = await world()
    usage = InMemoryUsageStore()
    after.meter = UsageMeter(usage, store, clock=lambda: T0)
    await after.follow_up(cid, RunStatus.COMPLETED)
    (row,) = await usage.rows(BOOTSTRAP_ID, T0.date(), T0.date())
    assert (row.model, row.calls, row.estimated_calls) == (model.name, 1, 1)
    assert row.input_tokens > 0 and row.output_tokens == 5  # "Lighthouse history": 18 characters


async def test_a_run_that_asks_no_follow_up_gets_no_title_nor_turn_count() -> None:
    """A hosted graph's run (services.hosted): its thread's state is the graph's, so neither
    the model's title nor a turn count is asked for."""
    after, store, model, cid = await world()
    active = ActiveRun(new_id(), cid)
    active.outcome, active.follow_up = Outcome(RunStatus.COMPLETED), False
    after.run_ended(active)
    await asyncio.gather(*after._tasks)  # none, or the follow-up it should not have
    conv = await store.get_conversation(cid)
    assert conv is not None and (conv.title_by, conv.turns) == (TitleSource.MESSAGE, None) and model.seen == []
    active.follow_up = True  # the same run of Sophos's agent is followed up
    after.run_ended(active)
    await asyncio.gather(*after._tasks)
    assert (await store.get_conversation(cid)).turns == 1  # type: ignore[union-attr]
