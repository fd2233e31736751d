"""The process that reads PDFs for `adapters.files.pdf`: one file at a time, its cost bounded.

Run as a script in isolated mode (`python -I pdf_worker.py MEMORY_BYTES`), it imports the
standard library and pypdf only: nothing of Sophos, no setting, no environment (the server
passes none), no file descriptor but its three pipes (it closes any other it was given). It lowers its own priority and sets
its limits before it reads anything, so a hostile file's cost is bounded even if the
server that asked is gone:
- RLIMIT_AS (MEMORY_BYTES): an allocation past it is a MemoryError, answered "memory";
- RLIMIT_CPU: before each file, the CPU seconds used so far plus that file's budget (sent
  with it); past it the kernel ends the process (SIGXCPU; RLIMIT_CORE 0: no core file);
- nice: the server's own work (the chats beside it) comes first.
The server also kills it (SIGKILL) when a file takes longer than the limit on the clock.

Protocol, on stdin and stdout: every message is an 8-byte big-endian length and that many
bytes. Ready: an empty message once pypdf is imported. Request: the CPU budget in whole
seconds (8 bytes), then the PDF's bytes. Answer: JSON, {"text": ...} or {"error": kind,
"detail": ...} with kind one of encrypted, damaged, empty, memory. After "memory" the
worker exits (a process that ran out of memory is not trusted with the next file); at end
of input it exits too (the server closed its pipe, or is gone).
"""

from __future__ import annotations

import io
import json
import os
import resource
import struct
import sys
import time
from typing import BinaryIO

PAGES = 500  # read at most this many pages
CHARS = 2_000_000  # more than any context holds: the prompt shortens it anyway
NICE = 10
HEADER = struct.Struct(">Q")


def read_message(stream: BinaryIO) -> bytes | None:
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (size,) = HEADER.unpack(head)
    body = stream.read(size)
    return body if len(body) == size else None


def write_message(stream: BinaryIO, body: bytes) -> None:
    stream.write(HEADER.pack(len(body)) + body)
    stream.flush()


def extract(data: bytes) -> dict[str, str]:
    """The PDF's text (at most PAGES pages, CHARS characters), or why there is none."""
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            return {"error": "encrypted"}
        parts: list[str] = []
        size = 0
        for page in reader.pages[:PAGES]:
            text = page.extract_text() or ""
            parts.append(text)
            size += len(text)
            if size >= CHARS:
                break
    except MemoryError:
        return {"error": "memory"}
    except Exception as e:  # any failure of a parser on untrusted bytes: the file cannot be read
        return {"error": "damaged", "detail": f"{type(e).__name__}: {e}"[:300]}
    text = "\n\n".join(p.strip() for p in parts if p.strip())[:CHARS]
    return {"text": text} if text else {"error": "empty"}


def limit(memory: int) -> None:
    os.nice(NICE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def budget(seconds: int) -> None:
    """This file may use `seconds` more of CPU (the hard limit stays unlimited, so the next
    file may have its own)."""
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    resource.setrlimit(resource.RLIMIT_CPU, (int(time.process_time()) + seconds + 1, hard))


def main(argv: list[str]) -> int:
    # nothing of the server's but the three pipes: uvloop (which `sophos serve` runs on) does
    # not close the descriptors a child would inherit, as subprocess does
    os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    # the protocol keeps stdout to itself: anything else written there (a library's print)
    # goes where stderr goes
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    source = sys.stdin.buffer
    limit(int(argv[1]))
    import pypdf  # noqa: F401  # before "ready": a file's time is its own

    write_message(out, b"")
    while (request := read_message(source)) is not None:
        (seconds,) = HEADER.unpack(request[: HEADER.size])
        budget(seconds)
        try:
            answer = extract(request[HEADER.size :])
            del request
            body = json.dumps(answer).encode()
        except MemoryError:
            answer, body = {"error": "memory"}, b'{"error": "memory"}'
        write_message(out, body)
        if answer.get("error") == "memory":
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
