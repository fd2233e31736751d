"""The `sophos` command as a user runs it: real processes on a real database file."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.app import SOPHOS, app_env, config_dir, ledger_server_entry, process_env
from tests.support.cli import sophos
from tests.support.fake_ollama import fake_ollama
from tests.support.server import free_port


@pytest.mark.slow
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
    unwritable = sophos(env, tmp_path, "export", cid, "-o", str(tmp_path / "no" / "such" / "dir.md"))
    assert (unwritable.returncode, unwritable.stderr.strip()) == (
        2,
        f"error: BAD_REQUEST: cannot write {tmp_path}/no/such/dir.md: No such file or directory",
    )


def test_expected_errors_are_one_line_and_a_meaningful_exit_code(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    cases: list[tuple[tuple[str, ...], int, str]] = [
        (
            ("show", "not-a-uuid"),
            2,
            "error: BAD_REQUEST: Invalid Conversation ID: give the id, a unique prefix of it (4 or more hex digits) or last",
        ),
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
        child = subprocess.Popen(
            [SOPHOS, "chat", "talk a lot"],
            env=process_env(env),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
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
    assert any(line.startswith("ok   tools    ledger: 5 tool(s)") for line in lines)
    assert any(line.startswith("BAD  tools    broken:") for line in lines)


def test_db_stats_prune_and_vacuum(tmp_path: Path) -> None:
    import sqlite3

    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="demo", CHECKPOINT_KEEP="0")  # keep everything
    chat = sophos(env, tmp_path, "chat", "one")
    cid = chat.stderr.split("conversation: ")[1].split()[0]
    sophos(env, tmp_path, "chat", "-c", cid, "two")
    stats = json.loads(sophos(env, tmp_path, "db", "stats", "--json").stdout)
    assert stats["conversations"] == 1 and stats["runs"] == 2 and stats["checkpoints"] == 8
    assert stats["largest"][0]["thread_id"] == cid
    pruned = sophos(env, tmp_path, "db", "prune", "--keep", "1")
    assert pruned.returncode == 0 and pruned.stdout.startswith("deleted 7 checkpoint(s)")
    assert sophos(env, tmp_path, "db", "prune", "--keep", "0").returncode == 2
    after = json.loads(sophos(env, tmp_path, "db", "stats", "--json").stdout)
    assert after["checkpoints"] == 1 and after["logged_checkpoints"] == 8
    lines = sophos(env, tmp_path, "export", cid, "--format", "jsonl").stdout.strip().split("\n")
    assert len(lines) == 8  # the history survives pruning
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


@pytest.mark.parametrize(
    ("settings", "line"),
    [
        (
            {"LANGGRAPH_API_CORS_ORIGINS": "*"},
            "refusing to serve LANGGRAPH_API_CORS_ORIGINS without a login: any page "
            "of those origins would act as the admin; set API_TOKEN (or add a user)",
        ),
        (
            {"LANGGRAPH_API_CORS_ORIGINS": "http://localhost:3000"},
            "refusing to serve LANGGRAPH_API_CORS_ORIGINS without "
            "a login: any page of those origins would act as the admin; set API_TOKEN (or add a user)",
        ),
        (
            {"FORWARDED_ALLOW_IPS": "10.0.0.5", "API_TOKEN": "t"},
            "FORWARDED_ALLOW_IPS is not read: name the proxies "
            "whose forwarded headers are believed in TRUSTED_PROXY_IPS, and unset FORWARDED_ALLOW_IPS",
        ),
    ],
)
def test_serve_refuses_what_would_trust_the_wrong_people_in_one_line(tmp_path: Path, settings: dict[str, str], line: str) -> None:
    """Issue 42: CORS origins on a server that needs no login gave any page of them the whole
    agent; FORWARDED_ALLOW_IPS, which the docs once named, is no longer read."""
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", PORT="0", LANGGRAPH_API_PORT=str(free_port()), **settings)
    result = sophos(env, tmp_path, "serve")
    # the last line: a first start has logged its database's migrations before
    assert (result.returncode, result.stderr.strip().splitlines()[-1]) == (2, f"error: BAD_CONFIG: {line}")


def test_doctor_names_the_url_it_tried_and_a_fix_for_every_bad_line(tmp_path: Path) -> None:
    config_dir(tmp_path, {"broken": {"command": "/nonexistent", "args": ["--flag"]}})
    with fake_ollama() as fake:
        env = app_env(tmp_path, fake.url, OLLAMA_MODEL="nope")
        text = sophos(env, tmp_path, "doctor")
        as_json = sophos(env, tmp_path, "doctor", "--json")
    lines = text.stdout.splitlines()
    assert text.returncode == 1 and as_json.returncode == 1
    assert lines[0] == f'BAD  model    ollama nope: Ollama model "nope" not available ({fake.url}/api/tags)'
    assert lines[1].strip().startswith("fix: pull it first (`ollama pull nope`)")
    broken = lines.index(next(x for x in lines if x.startswith("BAD  tools    broken:")))
    assert "(/nonexistent --flag)" in lines[broken] and "run `/nonexistent --flag` by hand" in lines[broken + 1]
    report = json.loads(as_json.stdout)
    assert report["ok"] is False
    model = report["checks"][0]
    assert (model["kind"], model["ok"], model["url"]) == ("model", False, f"{fake.url}/api/tags")
    assert all(c["fix"] for c in report["checks"] if not c["ok"])


def test_an_unreachable_model_names_the_host_and_the_fix_and_exits_5(tmp_path: Path) -> None:
    env = app_env(tmp_path, "http://127.0.0.1:9", TOOLS_BACKEND="none")
    result = sophos(env, tmp_path, "chat", "hi")
    assert result.returncode == 5, result.stderr
    assert "error: MODEL_UNREACHABLE: Ollama at http://127.0.0.1:9 is unreachable" in result.stderr
    # the CLI's own way to try it offline, not the page's `make demo`
    assert (
        "start Ollama (`ollama serve`) or set OLLAMA_HOST, or add `--backend demo --tools demo` to try it offline"
        in result.stderr
    )
    assert "make demo" not in result.stderr
    assert "WARNING" not in result.stderr and "Traceback" not in result.stderr


def test_help_version_stdin_and_global_options_after_the_command(tmp_path: Path) -> None:
    from importlib.metadata import version

    env = app_env(tmp_path)  # Ollama on a dead port: only `--model demo` can answer
    assert "Usage: sophos [OPTIONS] COMMAND" in sophos(env, tmp_path, "-h").stdout
    assert "MESSAGE" in sophos(env, tmp_path, "chat", "-h").stdout
    assert sophos(env, tmp_path, "--version").stdout.strip() == f"sophos {version('sophos')}"

    def chat(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SOPHOS, *args], env=process_env(env), cwd=tmp_path, input=stdin, capture_output=True, text=True, timeout=120
        )

    dash = chat("chat", "-", "--model", "demo", "--tools", "none", stdin="from stdin\n")  # options after
    piped = chat("--model", "demo", "chat", "--tools", "none", stdin="piped in")  # before and after
    for result, text in ((dash, "from stdin"), (piped, "piped in")):
        assert result.returncode == 0 and f'You wrote: "{text}"' in result.stdout, result.stderr
    listed = sophos(env, tmp_path, "conversations", "--limit", "2").stdout.splitlines()
    assert [line.split("  ")[-1] for line in listed] == ["piped in", "from stdin"]


def test_rename_delete_and_cancel_on_the_database_file(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    cid = sophos(env, tmp_path, "chat", "hi").stderr.split("conversation: ")[1].split()[0]
    renamed = sophos(env, tmp_path, "rename", cid, "Trip plans")
    assert renamed.returncode == 0 and renamed.stdout.strip() == f"renamed {cid}: Trip plans"
    assert json.loads(sophos(env, tmp_path, "show", cid, "--json").stdout)["conversation"]["title"] == "Trip plans"
    idle = sophos(env, tmp_path, "cancel", cid)
    assert (idle.returncode, idle.stderr.strip()) == (4, "error: NO_ACTIVE_RUN: No run is active for this conversation")
    assert sophos(env, tmp_path, "delete", "--yes", cid).stdout.strip() == f"deleted {cid}"
    assert sophos(env, tmp_path, "show", cid).returncode == 3


def test_serve_on_a_busy_port_fails_before_saying_it_listens(tmp_path: Path) -> None:
    import socket

    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = sophos(env, tmp_path, "serve", "--port", str(port))
    assert result.returncode == 6 and "listening" not in result.stdout
    assert result.stderr.startswith(f"error: ADDRESS_IN_USE: 127.0.0.1:{port} is already in use")
    assert len(result.stderr.strip().splitlines()) == 1
    too_high = sophos({**env, "PORT": "99999"}, tmp_path, "serve")
    assert (too_high.returncode, too_high.stderr.strip()) == (
        6,
        "error: CANNOT_LISTEN: cannot listen on port 99999: a port is 1-65535 (--port or PORT)",
    )


def test_a_tool_servers_stderr_stays_out_of_the_terminal_unless_verbose(tmp_path: Path) -> None:
    import sys

    ledger = ledger_server_entry(tmp_path / "l.jsonl")
    noisy = {
        **ledger,
        "command": "sh",
        "args": ["-c", f'echo "Ledger running on stdio" >&2; exec "{sys.executable}" "$@"', "sh", *ledger["args"]],
    }
    config_dir(tmp_path, {"ledger": noisy})
    env = app_env(tmp_path, MODEL_BACKEND="demo")
    quiet = sophos(env, tmp_path, "chat", "hi")
    assert quiet.returncode == 0 and "running on stdio" not in quiet.stderr + quiet.stdout
    verbose = sophos(env, tmp_path, "chat", "hi", "-v")
    assert "MCP server ledger: Ledger running on stdio" in verbose.stderr


def test_a_database_path_that_cannot_be_opened_is_one_line_and_a_bad_doctor_line(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("a file, not a directory")
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", DATABASE_PATH=str(tmp_path / "plain" / "db" / "x.db"))
    listing = sophos(env, tmp_path, "conversations")
    assert listing.returncode == 1 and "Traceback" not in listing.stderr
    assert listing.stderr.strip().startswith(f"error: STORAGE_FAILURE: Cannot open the database {tmp_path}/plain/db/x.db:")
    doctor = sophos(env, tmp_path, "doctor")
    assert doctor.returncode == 1 and doctor.stdout.startswith("ok   model    demo demo")
    assert "BAD  database" in doctor.stdout and "fix: point DATABASE_PATH (or --db) at a writable place" in doctor.stdout


def test_doctor_compares_model_context_with_the_window_the_server_reports(tmp_path: Path) -> None:
    from tests.support.fake_openai import fake_openai

    config_dir(tmp_path)
    with fake_openai() as oai:
        oai.trained, oai.slot_window = 32768, 2048
        env = app_env(tmp_path, TOOLS_BACKEND="none", MODEL_BACKEND="openai", OPENAI_BASE_URL=oai.url, OPENAI_MODEL="local-model")
        result = sophos(env, tmp_path, "doctor")
    window = next(line for line in result.stdout.splitlines() if " window " in line)
    assert window.startswith("ok   window   MODEL_CONTEXT 8192: the server gives local-model 2,048 tokens a request"), window
    assert "runs plan for 2,048, not 8,192" in window
