"""The AttachmentStore contract (ports/attachments.py) on every checkpoint saver: a staged
file is stored by the write that first holds its message (a checkpoint, or a pending
input's writes), once per digest whichever conversations hold it, readable only through a
conversation that holds it, and gone with the last conversation that held it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from adapters.langchain.messages import to_langchain
from adapters.langgraph.keys import INPUT_TASK
from adapters.memory.saver import InMemoryThreadSaver
from adapters.postgres.database import PostgresDatabase
from adapters.postgres.saver import FencedPostgresSaver
from adapters.sqlite.saver import ThreadedSqliteSaver
from domain.attachments import Upload, parse_upload
from domain.model import UserMessage, new_id

PNG = (
    b"\x89PNG\r\n\x1a\n"
    + (13).to_bytes(4, "big")
    + b"IHDR"
    + (2).to_bytes(4, "big")
    + (3).to_bytes(4, "big")
    + b"\x08\x02\x00\x00\x00"
    + b"\x00" * 4
    + b"rest of the image"
)


def a_file(text: str = "a,b\n1,2\n", name: str = "data.csv") -> Upload:
    return parse_upload(name, "text/csv", text.encode())


def message_with(*files: Upload, text: str = "see the file") -> Any:
    return to_langchain(UserMessage(text, id=new_id(), attachments=tuple(f.attachment for f in files)))


def config_of(cid: str, checkpoint_id: str | None = None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": cid, "checkpoint_ns": ""}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


async def put_checkpoint(saver: Any, cid: str, messages: list[Any]) -> str:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": messages}
    checkpoint["channel_versions"] = {"messages": f"{len(messages):032}"}
    await saver.aput(config_of(cid), checkpoint, {"source": "input", "step": -1, "parents": {}}, checkpoint["channel_versions"])
    return str(checkpoint["id"])


class AttachmentStoreContract:
    @pytest.fixture
    def saver(self) -> Iterator[Any]:
        raise NotImplementedError

    async def stored_copies(self, saver: Any, digest: str) -> int:
        raise NotImplementedError

    async def test_a_staged_file_is_stored_with_the_checkpoint_that_holds_its_message(self, saver: Any) -> None:
        cid, f = new_id(), a_file()
        saver.stage_files(cid, [f])
        await put_checkpoint(saver, cid, [message_with(f)])
        stored = await saver.files(cid, [f.attachment.digest])
        assert stored[f.attachment.digest].data == f.data
        assert stored[f.attachment.digest].text == "a,b\n1,2\n"
        assert stored[f.attachment.digest].media_type == "text/csv"

    async def test_a_staged_file_is_stored_with_the_pending_input_that_holds_its_message(self, saver: Any) -> None:
        cid, f = new_id(), a_file()
        first = await put_checkpoint(saver, cid, [message_with(text="hello")])
        saver.stage_files(cid, [f])
        writes = [("branch:to:agent", None), ("messages", [message_with(f)])]
        await saver.aput_writes(config_of(cid, first), writes, INPUT_TASK)
        assert list(await saver.files(cid, [f.attachment.digest])) == [f.attachment.digest]

    async def test_a_write_that_does_not_hold_the_message_stores_nothing(self, saver: Any) -> None:
        cid, f = new_id(), a_file()
        saver.stage_files(cid, [f])
        await put_checkpoint(saver, cid, [message_with(text="no file here")])
        assert await saver.files(cid, [f.attachment.digest]) == {}
        saver.unstage_files(cid)
        await put_checkpoint(saver, cid, [message_with(f)])  # unstaged: nothing left to store
        assert await saver.files(cid, [f.attachment.digest]) == {}

    async def test_the_same_file_twice_is_one_copy(self, saver: Any) -> None:
        a, b, f = new_id(), new_id(), a_file()
        for cid in (a, b):
            saver.stage_files(cid, [f])
            await put_checkpoint(saver, cid, [message_with(f)])
            saver.stage_files(cid, [f])
            await put_checkpoint(saver, cid, [message_with(f), message_with(f, text="again")])
        assert await self.stored_copies(saver, f.attachment.digest) == 1
        assert list(await saver.files(a, [f.attachment.digest])) == list(await saver.files(b, [f.attachment.digest]))

    async def test_a_file_is_read_only_through_a_conversation_that_holds_it(self, saver: Any) -> None:
        a, b, f = new_id(), new_id(), a_file()
        saver.stage_files(a, [f])
        await put_checkpoint(saver, a, [message_with(f)])
        await put_checkpoint(saver, b, [message_with(text="mine")])
        assert await saver.files(b, [f.attachment.digest]) == {}

    async def test_a_file_is_deleted_with_the_last_conversation_that_holds_it(self, saver: Any) -> None:
        a, b, shared, own = new_id(), new_id(), a_file(), parse_upload("dot.png", "image/png", PNG)
        saver.stage_files(a, [shared, own])
        await put_checkpoint(saver, a, [message_with(shared, own)])
        saver.stage_files(b, [shared])
        await put_checkpoint(saver, b, [message_with(shared)])
        await saver.adelete_thread(a)
        assert await saver.files(a, [shared.attachment.digest, own.attachment.digest]) == {}
        assert await self.stored_copies(saver, own.attachment.digest) == 0
        assert await self.stored_copies(saver, shared.attachment.digest) == 1  # b still holds it
        assert list(await saver.files(b, [shared.attachment.digest])) == [shared.attachment.digest]
        await saver.adelete_thread(b)
        assert await self.stored_copies(saver, shared.attachment.digest) == 0

    async def test_released_files_leave_the_thread_and_go_when_no_one_holds_them(self, saver: Any) -> None:
        a, b, shared, own, kept = new_id(), new_id(), a_file(), a_file("x\n", "x.txt"), a_file("y\n", "y.txt")
        saver.stage_files(a, [shared, own, kept])
        await put_checkpoint(saver, a, [message_with(shared, own, kept)])
        saver.stage_files(b, [shared])
        await put_checkpoint(saver, b, [message_with(shared)])
        await saver.release_files(a, [shared.attachment.digest, own.attachment.digest])
        await saver.release_files(a, [own.attachment.digest])  # idempotent
        digests = [f.attachment.digest for f in (shared, own, kept)]
        assert list(await saver.files(a, digests)) == [kept.attachment.digest]
        assert await self.stored_copies(saver, own.attachment.digest) == 0
        assert list(await saver.files(b, digests)) == [shared.attachment.digest]


class TestInMemoryAttachments(AttachmentStoreContract):
    @pytest.fixture
    def saver(self) -> Iterator[Any]:
        yield InMemoryThreadSaver()

    async def stored_copies(self, saver: Any, digest: str) -> int:
        return 1 if digest in saver.file_blobs else 0


class TestSqliteAttachments(AttachmentStoreContract):
    @pytest.fixture
    def saver(self, tmp_path: Path) -> Iterator[Any]:
        saver = ThreadedSqliteSaver.open(str(tmp_path / "sophos.db"))
        yield saver
        saver.close()

    async def stored_copies(self, saver: Any, digest: str) -> int:
        with saver.cursor(transaction=False) as cur:
            return int(cur.execute("SELECT count(*) FROM attachment_blobs WHERE digest = ?", (digest,)).fetchone()[0])


class TestPostgresAttachments(AttachmentStoreContract):
    @pytest.fixture
    async def saver(self, pg_url: str) -> AsyncIterator[Any]:
        db = PostgresDatabase(pg_url)
        yield FencedPostgresSaver(db)
        await db.close()

    async def stored_copies(self, saver: Any, digest: str) -> int:
        async with saver.db.cursor() as cur:
            await cur.execute("SELECT count(*) FROM attachment_blobs WHERE digest = %s", (digest,))
            row = await cur.fetchone()
            return int(row[0])
