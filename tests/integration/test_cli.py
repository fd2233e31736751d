"""The `sophos` command as a user runs it: real processes on a real database file."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from tests.support.app import SOPHOS, app_env, config_dir, ledger_server_entry, process_env
from tests.support.fake_ollama import fake_ollama


def sophos(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SOPHOS, *args], env=process_env(env), cwd=cwd, capture_output=True, text=True, timeout=120)


def test_chat_then_read_commands_with_the_demo_backend(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="demo")
    chat = sophos(env, tmp_path, "chat", "hello sophos")
    assert chat.returncode == 0, chat.stderr
    assert 'You wrote: "hello sophos"' in chat.stdout and "→ demo__clock" in chat.stderr
    cid = chat.stderr.split("conversation: ")[1].split()[0]
    listing = sophos(env, tmp_path, "conversations")
    assert cid in listing.stdout and "completed" in listing.stdout and "hello sophos" in listing.stdout
    listed = json.loads(sophos(env, tmp_path, "conversations", "--json").stdout)
    assert listed["conversations"][0]["id"] == cid and listed["conversations"][0]["messageCount"] == 5
    shown = json.loads(sophos(env, tmp_path, "show", cid, "--json").stdout)
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "tool", "tool", "assistant"]
    md = sophos(env, tmp_path, "export", cid)
    assert md.stdout.startswith("# hello sophos") and "**Tool call** `demo__clock`" in md.stdout
    out = tmp_path / "out.jsonl"
    assert sophos(env, tmp_path, "export", cid, "--format", "jsonl", "-o", str(out)).returncode == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[-1]["next"] == [] and lines[-1]["message_count"] == 5


def test_expected_errors_are_one_line_and_a_meaningful_exit_code(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    cases: list[tuple[tuple[str, ...], int, str]] = [
        (("show", "not-a-uuid"), 2, "error: BAD_REQUEST: Invalid Conversation ID"),
        (("show", "11111111-1111-4111-8111-111111111111"), 3, "error: NOT_FOUND: Conversation Not Found"),
        (("chat", "   "), 2, "error: BAD_REQUEST: Message is required"),
    ]
    for args, code, line in cases:
        result = sophos(env, tmp_path, *args)
        assert (result.returncode, result.stderr.strip()) == (code, line), args
    chat = sophos(env, tmp_path, "chat", "hi")
    cid = chat.stderr.split("conversation: ")[1].split()[0]
    result = sophos(env, tmp_path, "resume", cid)
    assert (result.returncode, result.stderr.strip()) == (4, "error: RUN_NOT_RESUMABLE: Nothing to resume: the last run finished")
    bad = sophos({**env, "MODEL_BACKEND": "gpt"}, tmp_path, "conversations")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "MODEL_BACKEND" in bad.stderr


def test_a_missing_model_is_one_clear_line(tmp_path: Path) -> None:
    with fake_ollama() as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none", OLLAMA_MODEL="nope")
        result = sophos(env, tmp_path, "chat", "hi")
    assert result.returncode == 5 and "Traceback" not in result.stderr  # model errors exit 5
    assert "error: MODEL_UNAVAILABLE: The configured Ollama model 'nope' is not available" in result.stderr
    assert "pull it first (`ollama pull nope`)" in result.stderr
    assert "WARNING" not in result.stderr  # the outcome once, not a log line too


def test_ctrl_c_stops_the_run_as_cancelled_and_resume_finishes_it(tmp_path: Path) -> None:
    with fake_ollama([{"text": "word " * 200, "token_delay": 0.05}, {"text": "resumed answer"}]) as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        child = subprocess.Popen([SOPHOS, "chat", "talk a lot"], env=process_env(env), cwd=tmp_path,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert child.stdout is not None
        child.stdout.read(10)  # tokens are flowing
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
        assert child.returncode == 130 and "Traceback" not in err
        assert "cancelled; its progress is saved" in err
        cid = err.split("conversation: ")[1].split()[0]
        shown = json.loads(sophos(env, tmp_path, "show", cid, "--json").stdout)
        assert shown["conversation"]["status"] == "cancelled" and shown["resumable"] is True
        resumed = sophos(env, tmp_path, "resume", cid)
        assert resumed.returncode == 0 and "resumed answer" in resumed.stdout


def test_doctor_reports_the_model_and_each_tool_server(tmp_path: Path) -> None:
    config_dir(tmp_path, {"ledger": ledger_server_entry(tmp_path / "l.jsonl"), "broken": {"command": "/nonexistent", "args": []}})
    with fake_ollama() as fake:
        result = sophos(app_env(tmp_path, fake.url), tmp_path, "doctor")
    lines = result.stdout.splitlines()
    assert result.returncode == 1
    assert lines[0].startswith("ok   model    ollama qwen3")
    assert any(line.startswith("ok   tools    ledger: 4 tool(s)") for line in lines)
    assert any(line.startswith("BAD  tools    broken:") for line in lines)


def test_db_stats_prune_and_vacuum(tmp_path: Path) -> None:
    import sqlite3

    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="demo", CHECKPOINT_KEEP="0")  # keep everything
    chat = sophos(env, tmp_path, "chat", "one")
    cid = chat.stderr.split("conversation: ")[1].split()[0]
    sophos(env, tmp_path, "chat", "-c", cid, "two")
    stats = json.loads(sophos(env, tmp_path, "db", "stats", "--json").stdout)
    assert stats["conversations"] == 1 and stats["runs"] == 2 and stats["checkpoints"] == 10
    assert stats["largest"][0]["thread_id"] == cid
    pruned = sophos(env, tmp_path, "db", "prune", "--keep", "1")
    assert pruned.returncode == 0 and pruned.stdout.startswith("deleted 9 checkpoint(s)")
    assert sophos(env, tmp_path, "db", "prune", "--keep", "0").returncode == 2
    after = json.loads(sophos(env, tmp_path, "db", "stats", "--json").stdout)
    assert after["checkpoints"] == 1 and after["logged_checkpoints"] == 10
    lines = sophos(env, tmp_path, "export", cid, "--format", "jsonl").stdout.strip().split("\n")
    assert len(lines) == 10  # the history survives pruning
    assert sophos(env, tmp_path, "db", "vacuum").returncode == 0
    shown = json.loads(sophos(env, tmp_path, "show", cid, "--json").stdout)
    assert len(shown["messages"]) == 10
    db = sqlite3.connect(env["DATABASE_PATH"])
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


async def test_deleting_a_conversation_frees_its_space(tmp_path: Path) -> None:
    import sqlite3

    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="demo")
    chat = sophos(env, tmp_path, "chat", "remember me")
    cid = chat.stderr.split("conversation: ")[1].split()[0]
    from entrypoints.container import create_container

    container = create_container(env)
    await container.conversations().delete(cid)
    from entrypoints.container import close_container

    await close_container(container)
    db = sqlite3.connect(env["DATABASE_PATH"])
    for table in ("checkpoints", "writes", "checkpoint_log"):
        assert db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM tool_calls").fetchone()[0] == 0


def test_serve_refuses_a_public_address_without_a_token(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    result = sophos(env, tmp_path, "serve", "--host", "0.0.0.0")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: BAD_CONFIG: refusing to listen on 0.0.0.0 without API_TOKEN set"
