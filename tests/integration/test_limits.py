"""A limit is the domain's: the CLI refuses what the API refuses, with the same message."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.support.app import SOPHOS, app_env, process_env

TOO_LONG = "x" * 32_001


def api_error(make_client: Any, body: dict[str, Any]) -> tuple[int, str, str]:
    response = make_client().post("/api/chat", json=body)
    error = response.json()["error"]
    return response.status_code, error["code"], error["message"]


def cli_error(tmp_path: Path, *args: str, stdin: str | None = None) -> tuple[int, str]:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    done = subprocess.run(
        [SOPHOS, *args], env=process_env(env), cwd=tmp_path, input=stdin, capture_output=True, text=True, timeout=120
    )
    return done.returncode, done.stderr.strip()


def test_a_message_too_long_for_the_api_is_refused_by_the_cli_with_the_same_message(tmp_path: Path, make_client: Any) -> None:
    status, code, message = api_error(make_client, {"message": TOO_LONG})
    assert (status, code, message) == (400, "BAD_REQUEST", "Message is longer than 32000 characters")
    assert cli_error(tmp_path, "chat", "-", stdin=TOO_LONG) == (2, f"error: {code}: {message}")
    listed = cli_error(tmp_path, "conversations", "--json")
    assert listed[0] == 0  # nothing was created on the way to the refusal


def test_a_title_too_long_is_refused_the_same_by_the_cli_and_the_api(tmp_path: Path, make_client: Any) -> None:
    client = make_client()
    cid = client.post("/api/chat", json={"message": "hi"}).json()["conversation"]
    response = client.patch(f"/api/conversations/{cid}", json={"title": "t" * 201})
    error = response.json()["error"]
    assert (response.status_code, error["message"]) == (400, "Title is longer than 200 characters")
    assert cli_error(tmp_path, "rename", cid, "t" * 201) == (2, f"error: {error['code']}: {error['message']}")
