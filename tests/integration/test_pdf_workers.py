"""PDFs are read in worker processes of their own (adapters/files/pdf.py): a hostile file
costs at most PDF_TIMEOUT on the clock and PDF_MEMORY of memory, its worker is killed and
reaped before the answer, and no thread of the server is ever taken (issue 42 item 1)."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from adapters.files.pdf import PdfLimits, ProcessPdfExtractor
from domain.errors import AttachmentUnreadable, PdfBusy
from tests.support.files import memory_bomb_pdf, nested_forms_pdf, pdf

pytestmark = pytest.mark.processes

MB = 1024 * 1024


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def alive(pid: int) -> bool:
    """The process exists (a zombie counts: it is not reaped)."""
    return Path(f"/proc/{pid}").exists()


async def gone(pid: int, within: float = 10.0) -> bool:
    async with asyncio.timeout(within):
        while alive(pid):
            await asyncio.sleep(0.01)
    return True


@pytest.fixture(params=["asyncio", "uvloop"])
def event_loop_policy(request: pytest.FixtureRequest) -> asyncio.AbstractEventLoopPolicy:
    """Every test on asyncio's loop and on uvloop's, which `sophos serve` runs on (its
    subprocesses are its own, and keep the descriptors a child may inherit)."""
    if request.param == "uvloop":
        import uvloop

        return uvloop.EventLoopPolicy()
    return asyncio.DefaultEventLoopPolicy()


@pytest.fixture
async def reader() -> AsyncIterator[ProcessPdfExtractor]:
    extractor = ProcessPdfExtractor(PdfLimits(seconds=2, memory=512 * MB, workers=2))
    yield extractor
    await extractor.aclose()


async def test_a_pdf_that_reads_for_an_hour_is_refused_at_the_limit_its_worker_killed_and_no_thread_taken(
    reader: ProcessPdfExtractor,
) -> None:
    # the default executor of one thread: a file read in a thread (as before) would hold it
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(1))
    assert await reader.pdf_text("warm.pdf", pdf("warm")) == "warm"
    [pid] = reader.workers()
    with pytest.raises(AttachmentUnreadable, match="nested.pdf: the PDF took too long to read"):
        await reader.pdf_text("nested.pdf", nested_forms_pdf())
    assert not alive(pid)  # killed and reaped before the answer: no CPU spent after it, no zombie
    assert await asyncio.wait_for(asyncio.to_thread(lambda: "free"), 10) == "free"
    assert await reader.pdf_text("next.pdf", pdf("next one")) == "next one"  # another worker took over


async def test_a_pdf_needing_more_memory_than_allowed_is_refused_and_its_worker_ends() -> None:
    reader = ProcessPdfExtractor(PdfLimits(seconds=120, memory=256 * MB, workers=1))
    try:
        assert await reader.pdf_text("warm.pdf", pdf("warm")) == "warm"
        [pid] = reader.workers()
        with pytest.raises(AttachmentUnreadable, match="bomb.pdf: the PDF needs more memory to read than a PDF may use"):
            await reader.pdf_text("bomb.pdf", memory_bomb_pdf())  # ~750 MB to read
        assert not alive(pid)
        assert await reader.pdf_text("after.pdf", pdf("after")) == "after"
    finally:
        await reader.aclose()


async def test_workers_are_kept_for_the_next_file_and_never_more_than_the_limit(reader: ProcessPdfExtractor) -> None:
    texts = await asyncio.gather(*(reader.pdf_text(f"{i}.pdf", pdf(f"file {i}")) for i in range(6)))
    assert texts == [f"file {i}" for i in range(6)]
    first = set(reader.workers())
    assert 1 <= len(first) <= 2
    assert await reader.pdf_text("again.pdf", pdf("again")) == "again"
    assert set(reader.workers()) == first  # no new process for a file a worker can read


async def test_a_file_that_finds_every_worker_busy_is_refused_with_pdf_busy_and_a_caller_gone_takes_its_worker() -> None:
    reader = ProcessPdfExtractor(PdfLimits(seconds=60, memory=512 * MB, workers=1, wait=0.5))
    try:
        assert await reader.pdf_text("warm.pdf", pdf("warm")) == "warm"
        [pid] = reader.workers()
        before = cpu_seconds(pid)
        hostile = asyncio.create_task(reader.pdf_text("nested.pdf", nested_forms_pdf()))
        async with asyncio.timeout(30):
            while cpu_seconds(pid) < before + 0.3:  # the hostile file is being read by the only worker
                await asyncio.sleep(0.01)
        with pytest.raises(PdfBusy, match="Too many PDFs are being read"):
            await reader.pdf_text("report.pdf", pdf("report"))
        hostile.cancel()  # its request went away: the worker reading it is killed
        with pytest.raises(asyncio.CancelledError):
            await hostile
        assert await gone(pid)
        assert await reader.pdf_text("report.pdf", pdf("report")) == "report"
    finally:
        await reader.aclose()


async def test_a_worker_inherits_no_descriptor_and_no_environment_of_the_server(
    reader: ProcessPdfExtractor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://sophos:secret@db/sophos")
    with socket.socket() as listening, socket.socket() as leaky:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        leaky.set_inheritable(True)  # as a library might leave one
        assert await reader.pdf_text("warm.pdf", pdf("warm")) == "warm"
        [pid] = reader.workers()
        fds = {int(fd): os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        held = {os.readlink(f"/proc/self/fd/{s.fileno()}") for s in (listening, leaky)}
    # stdin and its answers (pipes, or socket pairs on uvloop), stdout and stderr on /dev/null
    assert set(fds) == {0, 1, 2, 3} and fds[1] == fds[2] == "/dev/null", fds
    assert not held & set(fds.values())
    assert b"secret" not in Path(f"/proc/{pid}/environ").read_bytes()


async def test_the_workers_end_with_the_reader(reader: ProcessPdfExtractor) -> None:
    await asyncio.gather(*(reader.pdf_text(f"{i}.pdf", pdf(f"file {i}")) for i in range(2)))
    pids = reader.workers()
    await reader.aclose()
    assert reader.workers() == [] and not any(alive(pid) for pid in pids)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"%PDF-1.4\ngarbage", r"the PDF cannot be read \(damaged or not a PDF\)"),
        (pdf(""), "the PDF has no text to read"),
    ],
)
async def test_a_damaged_or_empty_pdf_keeps_its_worker(reader: ProcessPdfExtractor, data: bytes, words: str) -> None:
    assert await reader.pdf_text("warm.pdf", pdf("warm")) == "warm"
    [pid] = reader.workers()
    with pytest.raises(AttachmentUnreadable, match=words):
        await reader.pdf_text("x.pdf", data)
    assert reader.workers() == [pid]
