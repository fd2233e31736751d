"""The listening socket stays with `sophos serve` (issue 35 item 10): a stdio MCP server it
starts must not inherit it, or a tool server that outlives a killed Sophos keeps the port."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.support.app import app_env, config_dir, ledger_server_entry
from tests.support.fake_ollama import fake_ollama
from tests.support.server import LiveServer


def listening_inodes(port: int) -> set[str]:
    """The socket inodes listening on `port` (any address, IPv4 and IPv6)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[1].rsplit(":", 1)[1] == f"{port:04X}" and fields[3] == "0A":  # 0A: LISTEN
                inodes.add(fields[9])
    return inodes


def socket_inodes(pid: int) -> set[str]:
    out = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[len("socket:[") : -1])
    return out


def children_with(arg: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and arg in (entry / "cmdline").read_bytes().decode(errors="replace").split("\0"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def test_a_stdio_tool_server_does_not_hold_the_listening_socket(tmp_path: Path) -> None:
    ledger = tmp_path / f"ledger-{os.getpid()}.jsonl"
    config_dir(tmp_path, {"ledger": ledger_server_entry(ledger)})
    with fake_ollama() as fake:
        server = LiveServer(app_env(tmp_path, fake.url), tmp_path).start()
        try:
            assert server.get("/api/readyz").status_code == 200  # the tool server is up by now
            tools = []
            for _ in range(100):
                tools = children_with(str(ledger))
                if tools:
                    break
                time.sleep(0.1)
            assert tools, "the ledger server was started"
            listening = listening_inodes(server.port)
            assert server.proc is not None and listening & socket_inodes(server.proc.pid)
            for pid in tools:
                assert not listening & socket_inodes(pid), f"tool server {pid} holds the port {server.port}"
        finally:
            server.stop()
