"""The listening socket stays with `sophos serve` (issue 35 item 10): a stdio MCP server it
starts must not inherit it, or a tool server that outlives a killed Sophos keeps the port.
The LangGraph API's default port taken by another program (issue 48 item 1) does not stop
the page and /api."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from tests.support.app import app_env, config_dir, ledger_server_entry
from tests.support.cli import sophos
from tests.support.fake_ollama import fake_ollama
from tests.support.server import LGAPI_DEFAULT, LiveServer, default_lgapi_port_taken


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


def test_a_taken_default_langgraph_port_is_one_warning_and_the_page_is_served(tmp_path: Path) -> None:
    with default_lgapi_port_taken():
        server = LiveServer(app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none"), tmp_path)
        del server.env["LANGGRAPH_API_PORT"]  # as `make run` starts it: the setting is not set
        server.start()
        try:
            assert "<html" in server.get("/").text.lower()
            assert server.post("/api/chat", {"message": "hello"}).status_code == 200
        finally:
            server.stop()
    log = server.log.read_text()
    warned = [line for line in log.splitlines() if str(LGAPI_DEFAULT) in line]
    assert len(warned) == 1, log
    assert " WARNING " in warned[0] and "LANGGRAPH_API_PORT" in warned[0] and "in use" in warned[0]
    assert "LangGraph API on" not in log and "Traceback" not in log


@pytest.mark.parametrize("given", ["the default", "another"])
def test_a_langgraph_port_set_by_hand_that_is_taken_is_refused(tmp_path: Path, given: str) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    with default_lgapi_port_taken(), socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = str(LGAPI_DEFAULT if given == "the default" else held.getsockname()[1])
        done = sophos({**env, "LANGGRAPH_API_PORT": port, "PORT": "0"}, tmp_path, "serve", timeout=60)
    assert done.returncode == 6, done.stderr
    assert f"ADDRESS_IN_USE: 127.0.0.1:{port} is already in use" in done.stderr
    assert "LANGGRAPH_API_PORT" in done.stderr
