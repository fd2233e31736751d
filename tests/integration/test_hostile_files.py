"""Hostile PDFs against a real server (issue 42 item 1): eight files that pypdf would read for
an hour each, sent at once, are each refused at PDF_TIMEOUT, and the export and a chat beside
them are answered all the while, on SQLite and on PostgreSQL; the workers that read them are
gone when the refusals arrive. And the bulk work of a request (an export's zip, an import's
files) never queues on asyncio's default executor, which storage uses."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from domain.errors import AttachmentUnreadable, PdfBusy, SophosError
from entrypoints.cli.client import Stopper
from entrypoints.cli.local import LocalClient
from entrypoints.cli.output import Printer
from entrypoints.cli.remote import HttpClient
from entrypoints.container import create_container
from entrypoints.di import providers
from entrypoints.http.app import create_app
from ports.attachments import TextExtractor
from tests.support.app import app_env
from tests.support.files import nested_forms_pdf, pdf
from tests.support.server import LiveServer

HOSTILE = 8
KILLED = re.compile(r"its worker \(pid (\d+)\) is killed")


def cpu_seconds(pid: int, reaped: bool = False) -> float:
    """utime + stime of a process (and, `reaped`, of its children it has reaped)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11 : 15 if reaped else 13]) / os.sysconf("SC_CLK_TCK")


def pdf_workers(server_pid: int) -> list[int]:
    """The server's child processes that read PDFs."""
    out = []
    for task in Path(f"/proc/{server_pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                if b"pdf_worker.py" in Path(f"/proc/{child}/cmdline").read_bytes():
                    out.append(int(child))
            except FileNotFoundError:  # it ended meanwhile
                continue
    return out


def tree_cpu(server_pid: int) -> float:
    """CPU seconds of the server and of its PDF workers, alive or gone."""
    total = cpu_seconds(server_pid, reaped=True)
    for pid in pdf_workers(server_pid):
        try:
            total += cpu_seconds(pid)
        except FileNotFoundError:
            continue
    return total


async def reading(server_pid: int, since: float) -> None:
    """Until the server and its workers have spent half a second of CPU more than `since`:
    the hostile files are being read (wherever the server reads them)."""
    async with asyncio.timeout(60):
        while tree_cpu(server_pid) < since + 0.5:
            await asyncio.sleep(0.05)


async def turn(client: httpx.AsyncClient, body: dict[str, Any]) -> str:
    """A chat turn, answered and run to its end; the conversation's id."""
    r = await client.post("/api/chat", json=body)
    assert r.status_code == 200, r.text
    cid: str = r.json()["conversation"]
    async with client.stream("GET", "/api/chat", params={"conversation": cid}) as events:
        ends = [line async for line in events.aiter_lines() if line.startswith("event: end")]
    assert ends, "the run's stream ended without its end event"
    return cid


async def hostile_beside_normal(server: LiveServer) -> list[httpx.Response]:
    assert server.proc is not None
    data = base64.b64encode(nested_forms_pdf()).decode()
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        first = await turn(client, {"message": "before"})
        since = tree_cpu(server.proc.pid)
        hostile = [
            asyncio.create_task(
                client.post(
                    "/api/chat",
                    json={
                        "message": "read this",
                        "attachments": [{"name": f"nested-{i}.pdf", "type": "application/pdf", "data": data}],
                    },
                )
            )
            for i in range(HOSTILE)
        ]
        await reading(server.proc.pid, since)
        # beside the hostile files: the export (a thread of the default executor) and a chat
        # (storage: on PostgreSQL, a thread for its pending writes) are answered
        export = await client.get("/api/export", timeout=30)
        assert export.status_code == 200 and export.headers["content-type"] == "application/zip"
        second = await asyncio.wait_for(turn(client, {"message": "still there?", "conversation": first}), 30)
        assert second == first
        return list(await asyncio.gather(*hostile))


def check(server: LiveServer, answers: list[httpx.Response]) -> None:
    refused = [(r.status_code, r.json()["error"]["code"]) for r in answers]
    # each read until PDF_TIMEOUT, or refused after waiting as long for a worker
    assert set(refused) <= {(400, "ATTACHMENT_UNREADABLE"), (503, "PDF_BUSY")}, refused
    assert (400, "ATTACHMENT_UNREADABLE") in refused
    for r in answers:
        if r.status_code == 400:
            assert r.json()["error"]["message"].endswith("the PDF took too long to read")
    killed = [int(pid) for pid in KILLED.findall(server.log.read_text())]
    assert len(killed) == refused.count((400, "ATTACHMENT_UNREADABLE"))
    # killed and reaped before their answers: no process left, none spending CPU afterwards
    assert not any(Path(f"/proc/{pid}").exists() for pid in killed)
    assert len(pdf_workers(server.proc.pid if server.proc else 0)) <= 2


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", PDF_TIMEOUT="3", PDF_WORKERS="2")


@pytest.fixture
def sqlite_server(tmp_path: Path, env: dict[str, str]) -> Iterator[LiveServer]:
    server = LiveServer(env, tmp_path).start()
    yield server
    server.stop()


@pytest.fixture
def postgres_server(tmp_path: Path, env: dict[str, str], pg_url: str) -> Iterator[LiveServer]:
    server = LiveServer({**env, "DATABASE_URL": pg_url}, tmp_path).start()
    yield server
    server.stop()


async def test_hostile_pdfs_are_refused_at_the_limit_while_export_and_chats_go_on_sqlite(sqlite_server: LiveServer) -> None:
    check(sqlite_server, await hostile_beside_normal(sqlite_server))


async def test_hostile_pdfs_are_refused_at_the_limit_while_chats_go_on_postgres(postgres_server: LiveServer) -> None:
    check(postgres_server, await hostile_beside_normal(postgres_server))


@contextlib.asynccontextmanager
async def held_default_executor() -> AsyncIterator[None]:
    """asyncio's default executor (storage's and the libraries') with its only thread taken."""
    loop = asyncio.get_running_loop()
    release = threading.Event()
    loop.set_default_executor(ThreadPoolExecutor(1))
    held = loop.run_in_executor(None, release.wait)
    try:
        yield
    finally:
        release.set()
        await held


async def test_an_export_and_an_import_never_queue_on_the_default_executor(tmp_path: Path) -> None:
    container = create_container(app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none"), METRICS_BACKEND="none")
    local = LocalClient(container.services(), container)
    remote = HttpClient("http://127.0.0.1", None, transport=httpx.ASGITransport(create_app(container, manage_lifecycle=False)))
    try:
        await local.run({"message": "zeppelin"}, Printer(as_json=True), Stopper())
        async with held_default_executor(), asyncio.timeout(30):
            name, body = await remote.export_file(None)  # the zip is made on the bulk threads
            imported = await remote.import_file(body)  # and the upload unpacked there
    finally:
        await remote.aclose()
        await local.aclose()  # (closing the database is storage's: on the default executor)
    assert name.endswith(".zip") and [c["title"] for c in imported] == ["zeppelin"]


class Reader(TextExtractor):
    """A PDF reader that refuses every file as `error` does."""

    def __init__(self, error: SophosError) -> None:
        self.error = error

    async def pdf_text(self, name: str, data: bytes) -> str:
        raise self.error

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (PdfBusy(), 503, "PDF_BUSY"),  # try again: not the file's fault
        (AttachmentUnreadable("report.pdf: the PDF took too long to read"), 400, "BAD_REQUEST"),
    ],
)
def test_an_imported_pdf_the_reader_refuses_is_the_files_fault_only_when_it_is(
    tmp_path: Path, error: SophosError, status: int, code: str
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    source = create_container(app_env(tmp_path / "a", MODEL_BACKEND="demo", TOOLS_BACKEND="none"), METRICS_BACKEND="none")
    with TestClient(create_app(source)) as client:
        r = client.post(
            "/api/chat",
            json={
                "message": "look",
                "attachments": [
                    {"name": "report.pdf", "type": "application/pdf", "data": base64.b64encode(pdf("Revenue grew")).decode()}
                ],
            },
        )
        assert r.status_code == 200, r.text
        cid = r.json()["conversation"]
        client.get("/api/chat", params={"conversation": cid})  # the run to its end
        doc = client.get(f"/api/conversations/{cid}/export?format=json").json()
    for f in doc["conversation"]["attachments"]:
        f.pop("text", None)  # as another tool could write it: the text is read again
    target = create_container(app_env(tmp_path / "b", MODEL_BACKEND="demo", TOOLS_BACKEND="none"), METRICS_BACKEND="none")
    target.pdf_reader.override(providers.Object(Reader(error)))
    with TestClient(create_app(target)) as client:
        imported = client.post("/api/import", content=json.dumps(doc).encode())
    assert imported.status_code == status and imported.json()["error"]["code"] == code, imported.text
