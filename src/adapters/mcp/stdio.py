"""The stdio transport to an MCP server: its JSON-RPC lines read with bounds, its stderr
logged in bounded pieces.

Why not mcp's own `stdio_client`: it assembles a line by concatenating the whole line so far
with each new chunk, on the event loop (a 20 MiB tool result took 15.3 s and +242 MiB; one of
100 MiB never arrived, and the assembling went on at ~70% CPU after the call had timed out).
Here a line is gathered as a list of chunks and joined once (linear), a line longer than
MAX_LINE is never held (its head and tail are kept to answer its request with an error the
model sees), and a big line is parsed off the loop. Everything else is as mcp does it: the
server in a session of its own with mcp's default environment, stdin closed first on
shutdown, then the process group terminated (mcp's own helper) after the same grace.

A server's stderr goes to this process's log under the server's name (shown with `-v`), not
to the terminal, where banners like "running on stdio" would land in a CLI answer."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, BinaryIO

import anyio
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import ByteReceiveStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from langchain_mcp_adapters.sessions import create_session
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

log = logging.getLogger(__name__)

_BRACED = re.compile(r"\$\{(\w+)\}")

MAX_LINE = 16 * 1024 * 1024  # bytes of one message from a server (a tool result, JSON-encoded)
PARSE_OFF_LOOP = 256 * 1024  # a line at least this long is parsed on a worker thread
LOG_LINE = 8 * 1024  # bytes of a stderr line logged; the rest of the line is counted, not kept
SHUTDOWN_GRACE = 2.0  # seconds a server has to exit once its stdin is closed (as mcp)
TOO_LARGE = -32001  # the JSON-RPC error code of an answer refused for its size (server-defined range)
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')


class ServerStderr:
    """A pipe for a server's stderr and a thread that logs what comes out of it, a line at a
    time, each cut to LOG_LINE bytes: a server that writes without newlines costs a bounded
    buffer, not its whole output."""

    def __init__(self, name: str) -> None:
        read_fd, write_fd = os.pipe()
        self.fd = write_fd
        reader = os.fdopen(read_fd, "rb")
        self._thread = threading.Thread(target=self._pump, args=(name, reader), name=f"mcp-stderr-{name}", daemon=True)
        self._thread.start()

    @staticmethod
    def _pump(name: str, reader: BinaryIO) -> None:
        with reader:
            # ends when every writer (the server and its children) has closed
            while piece := reader.readline(LOG_LINE):
                ended = piece.endswith(b"\n")
                text = piece.decode("utf-8", "replace").rstrip()
                if text:
                    log.info("MCP server %s: %s%s", name, text, "" if ended else "…")
                if ended or len(piece) < LOG_LINE:
                    continue
                rest = 0  # a longer line: its start is logged, the rest only counted
                while more := reader.readline(LOG_LINE):
                    rest += len(more)
                    if more.endswith(b"\n"):
                        break
                log.info("MCP server %s: (%d more bytes of that line not logged)", name, rest)

    def close(self) -> None:
        """Our copy of the write end; the server keeps its own until it exits."""
        os.close(self.fd)


def _refusal(head: bytes, tail: bytes, size: int) -> SessionMessage | None:
    """An error answer to the request whose answer was too long to read, found by the id
    in the line's head or tail (where serializers put it); None when it cannot be found."""
    found = _ID.search(head) or next(iter(reversed(list(_ID.finditer(tail)))), None)
    if found is None:
        return None
    request_id = json.loads(found.group(1))
    message = f"the tool server's answer is {size / 2**20:.0f} MiB, over the {MAX_LINE // 2**20} MiB limit"
    error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=TOO_LARGE, message=message))
    return SessionMessage(types.JSONRPCMessage(error))


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.JSONRPCMessage.model_validate_json(line))
    except Exception as e:  # handed to the session, as mcp does; logged by _read_lines
        return e


class _Garbage:
    """One log line for a server printing lines that are not JSON-RPC, at most every 10 s:
    a server printing garbage would flood the log."""

    def __init__(self) -> None:
        self._last = -1e9

    def report(self, name: str) -> None:
        now = time.monotonic()
        if now - self._last >= 10.0:
            self._last = now
            log.warning("MCP server %s printed a line that is not JSON-RPC (ignored; repeats muted 10 s)", name)


class _Line:
    """The line being read: its pieces while it fits in MAX_LINE; past that, only its first
    and last KiBs (where a serializer puts the request id) and its size."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.size = 0
        self.head: bytes | None = None  # set once the line is over MAX_LINE
        self.tail = b""

    def add(self, part: bytes) -> None:
        self.size += len(part)
        if self.head is not None:
            self.tail = (self.tail + part)[-4096:]
        elif self.size > MAX_LINE:  # from now on only the ends are kept, without copying the line
            head = b""
            for piece in [*self.pieces, part]:
                head += piece[: 4096 - len(head)]
                if len(head) == 4096:
                    break
            self.head, self.tail, self.pieces = head, ((self.pieces or [b""])[-1] + part)[-4096:], []
        else:
            self.pieces.append(part)


async def _read_lines(name: str, stdout: ByteReceiveStream, sink: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    line, garbage = _Line(), _Garbage()
    async with sink:
        try:
            async for chunk in stdout:
                start = 0
                while (end := chunk.find(b"\n", start)) != -1:
                    line.add(chunk[start:end])
                    start = end + 1
                    if line.head is not None:
                        await _refuse(name, sink, line.head, line.tail, line.size)
                    elif line.size and (data := b"".join(line.pieces)).strip():
                        message = await _parsed(data)
                        if isinstance(message, Exception):
                            garbage.report(name)
                        await sink.send(message)
                    line = _Line()
                if start < len(chunk):
                    line.add(chunk[start:])
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            await anyio.lowlevel.checkpoint()


async def _parsed(line: bytes) -> SessionMessage | Exception:
    if len(line) < PARSE_OFF_LOOP:
        return _parse(line)
    return await anyio.to_thread.run_sync(_parse, line)


async def _refuse(
    name: str, sink: MemoryObjectSendStream[SessionMessage | Exception], head: bytes, tail: bytes, size: int
) -> None:
    refusal = _refusal(head, tail, size)
    log.warning(
        "MCP server %s sent a message of %d bytes (limit %d): %s",
        name,
        size,
        MAX_LINE,
        "its request is answered with an error" if refusal else "dropped (no request id found)",
    )
    if refusal is not None:
        await sink.send(refusal)


async def _write_lines(stdin: Any, source: MemoryObjectReceiveStream[SessionMessage]) -> None:
    async with source:
        try:
            async for message in source:
                data = message.message.model_dump_json(by_alias=True, exclude_none=True)
                await stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            await anyio.lowlevel.checkpoint()


@asynccontextmanager
async def bounded_stdio_client(
    name: str, params: StdioServerParameters, stderr_fd: int
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]]:
    env = {**get_default_environment(), **params.env} if params.env is not None else get_default_environment()
    process: Process = await anyio.open_process(
        [params.command, *params.args], env=env, stderr=stderr_fd, cwd=params.cwd, start_new_session=True
    )
    incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_receive = anyio.create_memory_object_stream[SessionMessage](0)
    assert process.stdout is not None and process.stdin is not None
    async with anyio.create_task_group() as tg, process:
        tg.start_soon(_read_lines, name, process.stdout, incoming_send)
        tg.start_soon(_write_lines, process.stdin, outgoing_receive)
        try:
            yield incoming, outgoing
        finally:
            try:
                await process.stdin.aclose()
            except Exception:  # already closed: the server went first
                pass
            try:
                with anyio.fail_after(SHUTDOWN_GRACE):
                    await process.wait()
            except TimeoutError:
                await terminate_posix_process_tree(process, SHUTDOWN_GRACE)
            except ProcessLookupError:
                pass
            for stream in (incoming, outgoing, incoming_send, outgoing_receive):
                await stream.aclose()


@asynccontextmanager
async def open_session(name: str, connection: dict[str, Any]) -> AsyncIterator[ClientSession]:
    """A session to one configured server (stdio or streamable HTTP)."""
    if connection.get("transport") != "stdio":
        async with create_session(connection) as session:  # type: ignore[arg-type]
            yield session
        return
    env = connection.get("env")
    params = StdioServerParameters(
        command=connection["command"],
        args=connection["args"],
        env={k: _BRACED.sub(lambda m: os.environ.get(m[1], m[0]), v) for k, v in env.items()} if env else None,
    )
    stderr = ServerStderr(name)
    try:
        if sys.platform == "win32":  # mcp's own transport knows Windows' job objects
            with os.fdopen(os.dup(stderr.fd), "w") as errlog:
                async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                    yield session
        else:
            async with bounded_stdio_client(name, params, stderr.fd) as (read, write), ClientSession(read, write) as session:
                yield session
    finally:
        stderr.close()
