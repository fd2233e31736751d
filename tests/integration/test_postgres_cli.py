"""The `sophos` command with DATABASE_URL: every command on PostgreSQL, as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.postgres.database import MIGRATIONS
from tests.integration.test_cli import sophos
from tests.support.app import app_env
from tests.support.server import free_port


@pytest.mark.slow
def test_every_command_works_on_postgres(tmp_path: Path, pg_empty_url: str) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="demo", CHECKPOINT_KEEP="0", DATABASE_URL=pg_empty_url)
    migrated = sophos(env, tmp_path, "db", "migrate")
    assert migrated.returncode == 0 and f"(schema v{len(MIGRATIONS)})" in migrated.stdout, migrated.stderr
    chat = sophos(env, tmp_path, "chat", "one")
    assert chat.returncode == 0, chat.stderr
    cid = chat.stderr.split("conversation: ")[1].split()[0]
    assert sophos(env, tmp_path, "chat", "-c", cid, "two").returncode == 0
    assert not (tmp_path / "db").exists()  # nothing went to the SQLite file
    stats = json.loads(sophos(env, tmp_path, "db", "stats", "--json").stdout)
    # the first turn writes 5 checkpoints (a tool round), the second 3: its message waits on
    # the first's last checkpoint as pending input
    assert stats["conversations"] == 1 and stats["runs"] == 2 and stats["checkpoints"] == 8
    assert stats["largest"][0]["thread_id"] == cid and stats["path"].startswith("postgresql://")
    pruned = sophos(env, tmp_path, "db", "prune", "--keep", "1")
    assert pruned.returncode == 0 and pruned.stdout.startswith("deleted 7 checkpoint(s)"), pruned.stderr
    lines = sophos(env, tmp_path, "export", cid, "--format", "jsonl").stdout.strip().split("\n")
    assert len(lines) == 8  # the history survives pruning
    assert sophos(env, tmp_path, "db", "vacuum").returncode == 0
    doctor = sophos(env, tmp_path, "doctor")
    assert doctor.returncode == 0 and "ok   database postgresql://" in doctor.stdout, doctor.stdout


def test_a_bad_or_unreachable_database_url_is_one_clear_line(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", DATABASE_URL="mysql://x@h/db")
    bad = sophos(env, tmp_path, "conversations")
    assert bad.returncode == 2 and "DATABASE_URL must be a postgresql:// URL" in bad.stderr
    assert "Traceback" not in bad.stderr
    down = f"postgresql://nobody:secret@127.0.0.1:{free_port()}/sophos"
    env.update(DATABASE_URL=down, DATABASE_BUSY_TIMEOUT="1")
    doctor = sophos(env, tmp_path, "doctor")
    assert doctor.returncode == 1 and "BAD  database postgresql://nobody@127.0.0.1" in doctor.stdout, doctor.stdout
    assert "secret" not in doctor.stdout + doctor.stderr
    listing = sophos(env, tmp_path, "conversations")
    assert listing.returncode != 0 and "STORAGE_FAILURE" in listing.stderr and "Traceback" not in listing.stderr
