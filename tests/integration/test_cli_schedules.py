"""`sophos schedule add|list|pause|resume|delete`, on this machine's database and through a
server (`--server`): one command written once for both."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.app import app_env
from tests.support.cli import sophos
from tests.support.fake_ollama import fake_ollama
from tests.support.server import LiveServer


def test_a_schedule_is_added_listed_paused_resumed_and_deleted_on_the_local_database(tmp_path: Path) -> None:
    env = app_env(tmp_path, TOOLS_BACKEND="none")
    added = sophos(
        env,
        tmp_path,
        "schedule",
        "add",
        "0 8 * * *",
        "Summarise my notes",
        "--tz",
        "Europe/Paris",
        "--catch-up",
        "skip",
        "--json",
    )
    assert added.returncode == 0, added.stderr
    made = json.loads(added.stdout)
    assert (made["cron"], made["tz"], made["catchUp"], made["conversationId"]) == ("0 8 * * *", "Europe/Paris", "skip", None)
    listed = sophos(env, tmp_path, "schedule", "list")
    assert made["id"][:8] in listed.stdout and "Summarise my notes" in listed.stdout and "next " in listed.stdout
    assert sophos(env, tmp_path, "schedule", "pause", made["id"][:6]).stdout.strip() == f"paused {made['id']}"
    assert "paused" in sophos(env, tmp_path, "schedule", "list").stdout
    assert sophos(env, tmp_path, "schedule", "resume", made["id"]).returncode == 0
    [again] = json.loads(sophos(env, tmp_path, "schedule", "list", "--json").stdout)["schedules"]
    assert again["enabled"] and again["nextAt"] == made["nextAt"]
    assert sophos(env, tmp_path, "schedule", "delete", made["id"][:8]).returncode == 0
    assert sophos(env, tmp_path, "schedule", "list").stdout.strip() == "No schedules."


def test_bad_schedules_and_unknown_ids_fail_clearly(tmp_path: Path) -> None:
    env = app_env(tmp_path, TOOLS_BACKEND="none")
    for args in (("* * *", "x"), ("0 8 * * *", "x", "--tz", "Mars/Base"), ("0 8 * * *", "x", "--ends", "soon")):
        bad = sophos(env, tmp_path, "schedule", "add", *args)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    missing = sophos(env, tmp_path, "schedule", "pause", "abcdef12")
    assert missing.returncode == 3 and "no schedule abcdef12" in missing.stderr
    assert sophos(env, tmp_path, "schedule", "delete", "ab").returncode == 2


def test_the_same_commands_work_through_a_server(tmp_path: Path) -> None:
    with fake_ollama() as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        server = LiveServer(env, tmp_path).start()
        try:
            cid = server.post("/api/chat", {"message": "hello"}).json()["conversation"]
            added = sophos(
                env, tmp_path, "schedule", "add", "--server", server.url, "30 7 * * 1-5", "Weekday brief", "-c", cid[:8]
            )
            assert added.returncode == 0, added.stderr
            [made] = server.get("/api/schedules").json()["schedules"]
            assert (made["conversationId"], made["message"]) == (cid, "Weekday brief")
            assert sophos(env, tmp_path, "schedule", "pause", "--server", server.url, made["id"][:8]).returncode == 0
            assert server.get(f"/api/schedules/{made['id']}").json()["schedule"]["enabled"] is False
            listed = json.loads(sophos(env, tmp_path, "schedule", "list", "--server", server.url, "--json").stdout)
            assert [s["id"] for s in listed["schedules"]] == [made["id"]]
            assert sophos(env, tmp_path, "schedule", "delete", "--server", server.url, made["id"]).returncode == 0
            assert server.get("/api/schedules").json() == {"schedules": []}
        finally:
            server.stop()
