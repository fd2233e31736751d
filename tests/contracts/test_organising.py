"""The organising part of the RunRepository contract (issue 48 items 12, 13): a conversation's
system mode, who gave its title, pins, the archive, temporary chats and turn counts, run
against every adapter."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from domain.model import Run, RunStatus, SystemMode, TitleSource, new_id
from domain.models import ChatSettings
from domain.organise import MAIN, Organise, Shown
from ports.runs import RunFinish
from tests.contracts.run_stores import InMemoryStores, PostgresStores, RunStore, SqliteStores, StoreContract

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


async def made(store: RunStore, title: str = "t", seconds: float = 0, **kwargs: object) -> str:
    cid = new_id()
    await store.create_conversation(cid, title, at(seconds), **kwargs)  # type: ignore[arg-type]
    return cid


async def ids(store: RunStore, shown: Shown = Shown()) -> list[str]:  # noqa: B008
    return [c.id for c in await store.list_conversations(shown=shown)]


class OrganisingContract(StoreContract):
    async def test_a_conversation_keeps_what_its_instructions_do_to_the_servers_prompt(self, store: RunStore) -> None:
        cid = await made(store, settings=ChatSettings("m", "be brief", SystemMode.REPLACE))
        conv = await store.get_conversation(cid)
        assert conv is not None and (conv.system, conv.system_mode) == ("be brief", SystemMode.REPLACE)
        assert await store.set_chat_settings(cid, ChatSettings("m", "be brief"))
        conv = await store.get_conversation(cid)
        assert conv is not None and conv.system_mode is SystemMode.ADD

    async def test_a_model_title_replaces_a_message_title_but_never_a_persons(self, store: RunStore) -> None:
        cid = await made(store, "hello there")
        assert await store.retitle(cid, "Greetings", TitleSource.MODEL)
        conv = await store.get_conversation(cid)
        assert conv is not None and (conv.title, conv.title_by, conv.updated_at) == ("Greetings", TitleSource.MODEL, at(0))
        assert not await store.retitle(cid, "Again", TitleSource.MODEL)  # a model title is not replaced either
        mine = await made(store, "hello")
        assert await store.rename_conversation(mine, "My title", at(5))
        assert not await store.retitle(mine, "Greetings", TitleSource.MODEL)
        conv = await store.get_conversation(mine)
        assert conv is not None and (conv.title, conv.title_by) == ("My title", TitleSource.USER)
        imported = await made(store, "From a file", title_by=TitleSource.USER)
        assert not await store.retitle(imported, "Other", TitleSource.MODEL)
        assert not await store.retitle(new_id(), "Other", TitleSource.MODEL)

    async def test_the_title_search_finds_a_model_title(self, store: RunStore) -> None:
        cid = await made(store, "New Conversation")
        await store.retitle(cid, "Lighthouse keepers", TitleSource.MODEL)
        assert [c.id for c in await store.list_conversations(query="lighthouse")] == [cid]

    async def test_pins_and_the_archive_choose_the_lists_without_reordering_them(self, store: RunStore) -> None:
        old, pinned, archived = await made(store, seconds=0), await made(store, seconds=1), await made(store, seconds=2)
        assert await store.organise(pinned, Organise(pinned=True))
        assert await store.organise(archived, Organise(archived=True))
        assert await ids(store) == [archived, pinned, old]  # every kept one, by use
        assert await ids(store, MAIN) == [pinned, old]
        assert await ids(store, Shown(archived=False, pinned=True)) == [pinned]
        assert await ids(store, Shown(archived=False, pinned=False)) == [old]
        assert await ids(store, Shown(archived=True)) == [archived]
        conv = await store.get_conversation(pinned)
        assert conv is not None and (conv.pinned, conv.archived, conv.updated_at) == (True, False, at(1))
        assert await store.organise(archived, Organise(archived=False, pinned=True))  # unarchived and pinned at once
        assert await ids(store, Shown(archived=False, pinned=True)) == [archived, pinned]
        assert await store.organise(pinned, Organise())  # nothing named: nothing changes
        assert not await store.organise(new_id(), Organise(pinned=True))

    async def test_a_temporary_conversation_is_never_listed(self, store: RunStore) -> None:
        kept, temporary = await made(store), await made(store, temporary=True)
        assert await ids(store) == [kept]
        assert await ids(store, MAIN) == [kept]
        assert [c.id for c in await store.find_conversations(temporary[:4], 10)] == []
        conv = await store.get_conversation(temporary)
        assert conv is not None and conv.temporary
        assert await store.temporary_among([kept, temporary, new_id()]) == {temporary}

    async def test_a_temporary_conversation_is_abandoned_once_left_with_no_run_going(self, store: RunStore) -> None:
        kept, temporary = await made(store, seconds=10), await made(store, seconds=10, temporary=True)
        assert await store.abandoned(at(0)) == []
        assert not await store.leave_temporary(kept)  # not temporary: nothing to leave
        run = Run(new_id(), temporary, RunStatus.RUNNING, at(11))
        await store.start_run(run, at(11))
        assert await store.leave_temporary(temporary)
        assert await store.abandoned(at(0)) == []  # its run is going
        assert await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, at(12)))
        assert await store.abandoned(at(0)) == [temporary]
        assert await store.delete_conversation(temporary)
        assert await store.abandoned(at(0)) == []

    async def test_a_temporary_conversation_nobody_used_for_long_is_abandoned(self, store: RunStore) -> None:
        temporary = await made(store, seconds=0, temporary=True)
        await made(store, seconds=0)
        assert await store.abandoned(at(-1)) == []
        assert await store.abandoned(at(1)) == [temporary]

    async def test_turns_are_recorded_without_touching_the_order(self, store: RunStore) -> None:
        cid = await made(store)
        conv = await store.get_conversation(cid)
        assert conv is not None and conv.turns is None
        assert await store.set_turns(cid, 3)
        conv = await store.get_conversation(cid)
        assert conv is not None and (conv.turns, conv.updated_at) == (3, at(0))
        assert [c.turns for c in await store.list_conversations()] == [3]
        assert not await store.set_turns(new_id(), 1)


class TestInMemoryOrganising(InMemoryStores, OrganisingContract):
    pass


class TestSqliteOrganising(SqliteStores, OrganisingContract):
    pass


class TestPostgresOrganising(PostgresStores, OrganisingContract):
    pass
