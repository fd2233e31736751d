"""`sophos … --server URL`: the CLI as a client of a real `sophos serve`."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.app import SOPHOS, app_env, process_env
from tests.support.cli import sophos
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.server import LiveServer

SLOW = {"text": "word " * 400, "token_delay": 0.05}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[LiveServer, FakeOllama, dict[str, str]]]:
    with fake_ollama() as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        server = LiveServer(env, tmp_path).start()
        try:
            yield server, fake, env
        finally:
            server.stop()


def _wait_running(server: LiveServer, cid: str) -> None:
    deadline = time.monotonic() + 30
    while "activeRun" not in server.get(f"/api/conversations/{cid}").json():
        assert time.monotonic() < deadline, "the run did not start"
        time.sleep(0.1)


def test_ctrl_c_cancels_the_remote_run_prints_the_ids_and_exits_130(
    tmp_path: Path, served: tuple[LiveServer, FakeOllama, dict[str, str]]
) -> None:
    server, fake, env = served
    fake.add(SLOW)
    # a terminal's Ctrl-C reaches a process whose SIGINT is the default, whatever the test
    # runner's disposition is (an ignored SIGINT would be inherited and the CLI never stopped)
    child = subprocess.Popen(
        [SOPHOS, "chat", "--server", server.url, "talk a lot"],
        env=process_env(env),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert child.stdout is not None
    child.stdout.read(20)  # tokens are flowing
    assert server.get("/api/conversations?limit=1").json()["conversations"][0]["status"] == "running"
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130 and "Aborted!" not in err and "Traceback" not in err, err
    ids = err.split("conversation: ")[1].split()
    cid, run_id = ids[0], ids[2]
    assert ids[3:5] == ["status:", "cancelled"]
    assert f"Resume with: sophos resume {cid} --server {server.url}" in err
    detail = server.get(f"/api/conversations/{cid}").json()
    assert detail["conversation"]["status"] == "cancelled" and detail["resumable"] is True
    assert len(run_id) == 36


def test_rename_cancel_and_delete_through_a_server_and_cancel_from_the_file(
    tmp_path: Path, served: tuple[LiveServer, FakeOllama, dict[str, str]]
) -> None:
    server, fake, env = served
    fake.add(SLOW, SLOW)
    cid = server.post("/api/chat", {"message": "first"}).json()["conversation"]
    _wait_running(server, cid)
    cancelled = sophos(env, tmp_path, "cancel", cid, "--server", server.url)
    assert cancelled.returncode == 0 and cancelled.stdout.strip().endswith("status: cancelled")
    server.post("/api/chat", {"message": "second", "conversation": cid})
    _wait_running(server, cid)
    local = sophos(env, tmp_path, "cancel", cid)  # the run executes in the server's process
    assert local.returncode == 0 and local.stdout.strip().endswith("status: cancelled"), local.stderr
    renamed = sophos(env, tmp_path, "rename", cid, "Remote title", "--server", server.url)
    assert renamed.returncode == 0 and server.get(f"/api/conversations/{cid}").json()["conversation"]["title"] == "Remote title"
    assert sophos(env, tmp_path, "delete", "--yes", "--server", server.url, cid).returncode == 0
    assert server.get(f"/api/conversations/{cid}").status_code == 404
    gone = sophos(env, tmp_path, "delete", "--yes", cid, "--server", server.url)
    assert (gone.returncode, gone.stderr.strip()) == (3, "error: NOT_FOUND: Conversation Not Found")


def test_a_model_failure_through_a_server_exits_5_and_an_unreachable_server_6(
    tmp_path: Path, served: tuple[LiveServer, FakeOllama, dict[str, str]]
) -> None:
    server, fake, env = served
    fake.add({"status": 404})
    failed = sophos(env, tmp_path, "chat", "--server", server.url, "hi")
    assert failed.returncode == 5, failed.stderr
    assert "error: MODEL_UNAVAILABLE:" in failed.stderr and "`ollama pull qwen3`" in failed.stderr
    down = sophos(env, tmp_path, "chat", "--server", "http://127.0.0.1:9", "hi")
    assert down.returncode == 6 and down.stderr.startswith("error: UNREACHABLE: cannot reach http://127.0.0.1:9")


def test_a_closed_pipe_cancels_the_remote_run_quietly(
    tmp_path: Path, served: tuple[LiveServer, FakeOllama, dict[str, str]]
) -> None:
    server, fake, env = served
    fake.add({"text": "row\n " * 400, "token_delay": 0.02})
    err = tmp_path / "err.txt"
    piped = subprocess.run(
        ["bash", "-c", f'set -o pipefail; "{SOPHOS}" chat --server {server.url} rows 2>"{err}" | head -1'],
        env=process_env(env),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (piped.stdout, piped.returncode, err.read_text()) == ("row\n", 141, "")
    [listed] = server.get("/api/conversations").json()["conversations"]
    assert listed["status"] == "cancelled"


def test_the_prompt_loop_keeps_one_conversation_on_a_server(
    tmp_path: Path, served: tuple[LiveServer, FakeOllama, dict[str, str]]
) -> None:
    server, fake, env = served
    fake.add({"text": "first answer"}, {"text": "second answer"})
    loop = subprocess.run(
        [SOPHOS, "repl", "--server", server.url],
        input="hello\nand more\n",
        env=process_env(env),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert loop.returncode == 0 and "first answer" in loop.stdout and "second answer" in loop.stdout, loop.stderr
    [conversation] = server.get("/api/conversations").json()["conversations"]
    assert conversation["messageCount"] == 4
    assert f"continue with: sophos repl -c {conversation['id']} --server {server.url}" in loop.stderr


def test_queue_and_steer_from_the_cli_and_the_first_chat_prints_the_queued_answer(
    tmp_path: Path, served: tuple[LiveServer, FakeOllama, dict[str, str]]
) -> None:
    server, fake, env = served
    fake.add({"text": "word " * 300, "token_delay": 0.05}, {"text": "the steered answer"}, {"text": "the queued answer"})
    first = subprocess.Popen(
        [SOPHOS, "chat", "--server", server.url, "talk a lot"],
        env=process_env(env),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert first.stdout is not None
    first.stdout.read(10)  # tokens are flowing
    cid = server.get("/api/conversations?limit=1").json()["conversations"][0]["id"]
    queued = sophos(env, tmp_path, "chat", "--server", server.url, "-c", cid, "--queue", "and then this")
    assert queued.returncode == 0, queued.stderr
    assert "queued (" in queued.stderr and "starts when the active run completes" in queued.stderr
    # on the database file itself (the local client), a steer goes first in line
    steered = sophos(env, tmp_path, "chat", "-c", cid, "--steer", "first this")
    assert steered.returncode == 0 and "steers the active run" in steered.stderr, steered.stderr
    refused = sophos(env, tmp_path, "chat", "--server", server.url, "--queue", "no conversation")
    assert refused.returncode == 2 and "--queue and --steer need a conversation" in refused.stderr
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert "» next queued message" in err and out.rstrip().endswith("the queued answer")
    shown = server.get(f"/api/conversations/{cid}").json()
    users = [m["content"] for m in shown["messages"] if m["role"] == "user"]
    assert users == ["talk a lot", "first this", "and then this"]
