"""Assistants (issue 44) as langgraph-api keeps them: the domain's rules (config and context in
step, a patch's new version, search, how a run's settings merge over its assistant's) and
services.assistants over the memory store (each graph's start-up assistant, ownership, who may
change a start-up one, the graphs served)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from adapters.memory.assistants import InMemoryAssistantStore
from domain.assistants import AssistantExists, AssistantPatch, AssistantQuery, NewAssistant, run_settings, settle
from domain.errors import ConversationNotFound, Forbidden, InvalidInput
from domain.graphs import GraphNotFound, assistant_id_of
from domain.model import new_id
from domain.principals import Principal, Role
from services.assistants import AssistantService
from tests.unit.test_hosted_service import Catalog

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ANN = Principal("ann", "ann", Role.USER)
BOB = Principal("bob", "bob", Role.USER)
ADMIN = Principal("root", "root", Role.ADMIN)


def test_config_and_context_are_kept_in_step_and_both_at_once_is_refused() -> None:
    assert settle({"configurable": {"m": 1}}, {}) == ({"configurable": {"m": 1}}, {"m": 1})
    assert settle({"tags": ["x"]}, {"m": 2}) == ({"tags": ["x"], "configurable": {"m": 2}}, {"m": 2})
    with pytest.raises(InvalidInput):
        settle({"configurable": {"m": 1}}, {"m": 2})


@pytest.mark.parametrize(
    "fields",
    [
        {"assistant_id": "not-a-uuid"},
        {"if_exists": "replace"},
        {"config": []},
        {"metadata": {"big": "x" * 20_000}},
        {"name": "n" * 600},
        {"metadata": {"v": float("nan")}},
    ],
)
def test_a_bad_new_assistant_is_refused_before_any_store(fields: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        NewAssistant("agent", **fields)  # type: ignore[arg-type]


def test_a_patch_makes_the_next_version_with_metadata_merged() -> None:
    a = NewAssistant("agent", name="one", metadata={"a": 1, "b": 2}, context={"m": "x"}).made("ann", T0)
    later = datetime(2026, 1, 2, tzinfo=UTC)
    b = AssistantPatch(metadata={"b": 3}).applied(a, 2, later)
    assert (b.version, dict(b.metadata), b.name, dict(b.context), b.created_at, b.updated_at) == (
        2,
        {"a": 1, "b": 3},
        "one",
        {"m": "x"},
        T0,
        later,
    )
    c = AssistantPatch(config={"configurable": {"m": "y"}}).applied(b, 3, later)
    assert (dict(c.config), dict(c.context)) == ({"configurable": {"m": "y"}}, {"m": "y"})


def test_search_filters_by_graph_name_and_contained_metadata_sorted_and_paged() -> None:
    made = [
        NewAssistant("g", name=name, metadata=meta).made("ann", datetime(2026, 1, day, tzinfo=UTC))
        for day, (name, meta) in enumerate(
            [("Alpha", {"k": {"x": 1, "y": 2}}), ("beta", {"k": {"x": 1}}), ("Gamma", {"k": 2})], start=1
        )
    ]
    names = lambda q: [a.name for a in q.select(made)]  # noqa: E731
    assert names(AssistantQuery()) == ["Gamma", "beta", "Alpha"]  # newest first
    assert names(AssistantQuery(metadata={"k": {"x": 1}})) == ["beta", "Alpha"]
    assert names(AssistantQuery(name="A", sort_by="name", sort_order="asc")) == ["Alpha", "beta", "Gamma"]
    assert names(AssistantQuery(limit=1, offset=1)) == ["beta"]
    for bad in [{"limit": 0}, {"limit": 5000}, {"sort_by": "owner"}, {"sort_order": "sideways"}]:
        with pytest.raises(InvalidInput):
            AssistantQuery(**bad)  # type: ignore[arg-type]


def test_a_run_s_settings_go_over_its_assistant_s_as_langgraph_api_merges_them() -> None:
    a = NewAssistant(
        "agent", config={"tags": ["a"], "configurable": {"model": "m1", "temp": 0}}, metadata={"team": "x", "k": 1}
    ).made("ann", T0)
    config, context = run_settings(a, {"configurable": {"model": "m2"}, "metadata": {"k": 2}}, None, {"run": True})
    assert config["tags"] == ["a"]
    assert config["configurable"] == {"model": "m2", "temp": 0, "assistant_id": a.assistant_id, "graph_id": "agent"}
    assert config["metadata"] == {"team": "x", "k": 2, "run": True, "assistant_id": a.assistant_id}
    assert context == {"model": "m2", "temp": 0}  # the request's configurable is its context, over the assistant's
    config, context = run_settings(a, {}, {"temp": 1}, None)
    assert (context, config["configurable"]["temp"]) == ({"model": "m1", "temp": 1}, 1)  # and its context its configurable
    assert run_settings(a, {}, None, None)[1] == {"model": "m1", "temp": 0}
    with pytest.raises(InvalidInput):
        run_settings(a, {"configurable": {"model": "m2"}}, {"temp": 1}, None)


def service() -> AssistantService:
    return AssistantService(InMemoryAssistantStore(), lambda: Catalog("agent", "other"), lambda: T0)


async def test_each_hosted_graph_has_a_start_up_assistant_named_by_either_id() -> None:
    s = service()
    found = await s.get("agent", by=ANN)
    assert (found.assistant_id, found.graph_id, found.system, dict(found.metadata)) == (
        assistant_id_of("agent"),
        "agent",
        True,
        {"created_by": "system"},
    )
    assert await s.get(assistant_id_of("other"), by=BOB) == await s.get("other", by=ANN)
    assert [a.graph_id for a in await s.search(AssistantQuery(sort_by="graph_id", sort_order="asc"), by=BOB)] == [
        "agent",
        "other",
    ]


async def test_a_user_s_assistant_is_theirs_and_another_s_answers_as_unknown() -> None:
    s = service()
    mine = await s.create(NewAssistant("agent", name="mine", metadata={"label": "x"}), by=ANN)
    assert mine.owner == "ann"
    for attempt in [
        s.get(mine.assistant_id, by=BOB),
        s.update(mine.assistant_id, AssistantPatch(name="b"), by=BOB),
        s.delete(mine.assistant_id, by=BOB),
        s.versions(mine.assistant_id, {}, 10, 0, by=BOB),
        s.set_latest(mine.assistant_id, 1, by=BOB),
    ]:
        with pytest.raises(ConversationNotFound):
            await attempt
    assert await s.count(AssistantQuery(metadata={"label": "x"}), by=BOB) == 0
    assert await s.count(AssistantQuery(metadata={"label": "x"}), by=ANN) == 1
    # its id is taken for everyone: do_nothing gives bob no view of it
    with pytest.raises(AssistantExists):
        await s.create(NewAssistant("agent", assistant_id=mine.assistant_id, if_exists="do_nothing"), by=BOB)
    assert await s.create(NewAssistant("agent", assistant_id=mine.assistant_id, if_exists="do_nothing"), by=ANN) == mine
    assert await s.resolve(mine.assistant_id, by=BOB) is None  # a run of bob's does not find it


async def test_a_start_up_assistant_is_changed_by_an_admin_only_and_once_deleted_runs_cannot_name_it() -> None:
    s = service()
    with pytest.raises(Forbidden):
        await s.update("agent", AssistantPatch(name="x"), by=ANN)
    with pytest.raises(Forbidden):
        await s.delete("agent", by=ANN)
    updated = await s.update("agent", AssistantPatch(config={"configurable": {"m": 1}}), by=ADMIN)
    assert updated.version == 2 and (await s.resolve("agent", by=ANN)) == updated
    await s.delete("agent", by=ADMIN)
    with pytest.raises(ConversationNotFound):
        await s.resolve("agent", by=ANN)  # as langgraph-api: 404 until a process starts again
    await AssistantService(s.store, lambda: Catalog("agent", "other"), lambda: T0).register()  # a restart
    assert (await s.resolve("agent", by=ANN)) is not None


async def test_only_graphs_the_server_hosts_have_assistants() -> None:
    s = service()
    with pytest.raises(GraphNotFound):
        await s.create(NewAssistant("nope"), by=ANN)
    mine = await s.create(NewAssistant("other"), by=ANN)
    fewer = AssistantService(s.store, lambda: Catalog("agent"), lambda: T0)  # the file no longer serves `other`
    with pytest.raises(ConversationNotFound):
        await fewer.get(mine.assistant_id, by=ANN)
    assert await fewer.resolve(mine.assistant_id, by=ANN) is None
    assert await fewer.resolve(new_id(), by=ANN) is None  # unknown: Sophos's agent's path answers it
    assert await fewer.resolve("not-a-uuid", by=ANN) is None
