"""Hostile and malformed files to import: each gets one clear error (400, or 413 for size)
and nothing is stored; the cost stays bounded (no recursion, no zip bomb, no cycle)."""

from __future__ import annotations

import io
import json
import subprocess
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from domain.transfer import Limits
from entrypoints.container import create_container
from entrypoints.http import transfer as http_transfer
from entrypoints.http.app import create_app
from tests.contracts.test_transfer import full_document
from tests.support.app import SOPHOS, app_env, process_env

FIXTURE = Path(__file__).parents[1] / "fixtures" / "chatgpt" / "conversations.json"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    with TestClient(create_app(create_container(env))) as client:
        yield client


def conversations(client: TestClient) -> list[Any]:
    items: list[Any] = client.get("/api/conversations").json()["conversations"]
    return items


def refused(client: TestClient, body: bytes, status: int = 400) -> str:
    started = time.monotonic()
    r = client.post("/api/import", content=body)
    assert time.monotonic() - started < 5, "a hostile file must cost little"
    assert r.status_code == status, r.text
    assert conversations(client) == []
    message: str = r.json()["error"]["message"]
    return message


def with_(path: list[Any], value: Any) -> bytes:
    doc = full_document()
    target: Any = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(doc).encode()


def zipped(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, content in files.items():
            z.writestr(name, content)
    return out.getvalue()


def test_malformed_documents_get_a_clear_error_naming_the_place(client: TestClient) -> None:
    branches = ["conversation", "branches"]
    cases: list[tuple[bytes, str]] = [
        (b"not json", "the file is not JSON"),
        (b"\xff\xfe\x00", "the file is not JSON"),
        (b"[" * 200_000 + b"]" * 200_000, "nests deeper than any export does"),
        (b'{"hello": 1}', "not a Sophos export (format sophos.conversation) nor ChatGPT's conversations.json"),
        (b"42", "not a Sophos export"),
        (with_(["version"], 2), "version 2 is not one this Sophos reads"),
        (with_(["conversation", "title"], ""), "title must be a non-empty string"),
        (with_([*branches, 1, "fork"], 99), "branch 2 must fork inside its parent's own messages"),
        (with_([*branches, 1, "parent"], 3), "branch 2's parent must be an earlier branch"),
        (with_([*branches, 2, "number"], 7), "branches must be numbered 1, 2, ... in order"),
        (with_([*branches, 0, "messages", 0, "role"], "system"), "branches[0].messages[0].role must be user, assistant"),
        (with_([*branches, 0, "messages", 0, "content"], "\ud800"), "is not valid Unicode"),
        (with_([*branches, 0, "messages", 1, "toolCalls", 0, "args"], [1]), "toolCalls[0].args must be an object"),
        (
            with_([*branches, 0, "messages", 1, "toolCalls", 0, "args"], {"a": json.loads("[" * 40 + "]" * 40)}),
            "nests deeper than 32",
        ),
        (with_(["conversation", "activeBranch"], 9), "activeBranch 9 is not one of its 3 branches"),
        (with_(["conversation", "createdAt"], "yesterday"), "createdAt must be an ISO-8601 time"),
        (with_(["conversation", "approvals", 0, "decision", "type"], "maybe"), "decision.type must be one of"),
        (with_(["conversation", "branches"], []), "a conversation needs at least one branch"),
    ]
    for body, expected in cases:
        assert expected in refused(client, body), expected


def test_bounds_on_size_counts_and_zips(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    small = Limits(bytes=50_000, conversations=3, messages=30, branches=2)
    for module in ("domain.transfer", "domain.chatgpt", "entrypoints.transfer_document", "entrypoints.transfer_files"):
        monkeypatch.setattr(f"{module}.LIMITS", small)
    monkeypatch.setattr(http_transfer, "LIMITS", small)
    assert "at most 0 MB" in refused(client, b" " * 60_000, 413)
    assert "more than 2 branches" in refused(client, json.dumps(full_document()).encode())
    many = [full_document(branches=False)] * 4
    assert "more than 3 conversations" in refused(client, json.dumps(many).encode())
    bomb = zipped({"a.json": b" " * 10_000_000})  # 10 MB of spaces compress to ~10 KB
    assert len(bomb) < 50_000
    assert "larger than 0 MB together" in refused(client, bomb)
    assert "the zip holds no .json file" in refused(client, zipped({"notes.txt": b"hi"}))
    assert "the zip cannot be read" in refused(client, b"PK\x03\x04 and then nothing")
    mixed = zipped({"good.json": json.dumps(full_document(branches=False)).encode(), "bad.json": b"{"})
    assert "the file is not JSON" in refused(client, mixed)  # the good one is not kept either


def chatgpt_with(change: Any) -> bytes:
    data = json.loads(FIXTURE.read_text())
    change(data[0]["mapping"])
    return json.dumps(data).encode()


def cycle(mapping: dict[str, Any]) -> None:
    mapping["a1"]["children"] = []  # u2 and a2 now hang from each other only
    mapping["u2"]["parent"] = "a2"
    mapping["a2"]["children"] = ["u2"]


def setting(node: str, path: list[str], value: Any) -> Any:
    def change(mapping: dict[str, Any]) -> None:
        target = mapping[node]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def test_a_malformed_chatgpt_file_is_refused_naming_the_place_and_stores_nothing(client: TestClient) -> None:
    cases: list[tuple[Any, str]] = [
        (cycle, 'conversation 1: mapping["u2"].parent: its parents go round in a cycle'),
        (
            setting("u2", ["message", "content", "parts"], "not a list"),
            'conversation 1: mapping["u2"].message.content.parts must be a list or null',
        ),
        (
            setting("u1", ["message", "author", "role"], 1),
            'conversation 1: mapping["u1"].message.author.role must be a string or null',
        ),
        (setting("a1", ["children"], "u2"), 'conversation 1: mapping["a1"].children must be a list or null'),
        (
            setting("a2", ["children"], ["u1", "a2", 17, "missing"]),
            'conversation 1: mapping["a2"].children[0] is mapping["u1"], whose parent is another node',
        ),
        (lambda mapping: mapping.update(junk="not a node"), 'conversation 1: mapping["junk"] must be an object'),
    ]
    for change, expected in cases:
        assert refused(client, chatgpt_with(change)) == expected
    assert "conversation 2: not a ChatGPT conversation" in refused_after(client, [{"title": "x", "mapping": {}}, 3])


NOTHING = "nothing to import: the file holds no conversation with a message to keep"


def test_a_file_with_nothing_to_import_is_refused(client: TestClient) -> None:
    hidden = json.loads(FIXTURE.read_text())[0]
    hidden["mapping"] = {k: v for k, v in hidden["mapping"].items() if k in ("root", "system")}
    hidden["mapping"]["system"]["children"] = []
    hidden["current_node"] = "system"  # a hidden system message: nothing a person wrote or read
    for body in (b"[]", json.dumps([hidden]).encode(), zipped({"a.json": b"[]", "b.json": json.dumps(hidden).encode()})):
        assert refused(client, body) == NOTHING


def refused_after(client: TestClient, doc: Any) -> str:
    before = conversations(client)
    r = client.post("/api/import", content=json.dumps(doc).encode())
    assert r.status_code == 400, r.text
    assert conversations(client) == before
    message: str = r.json()["error"]["message"]
    return message


def test_the_cli_imports_a_file_and_a_zip_and_refuses_a_bad_one_in_one_line(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")

    def sophos(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([SOPHOS, *args], env=process_env(env), cwd=tmp_path, capture_output=True, text=True, timeout=120)

    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "sophos.conversation", "version": 1, "conversation": {}}')
    refusal = sophos("import", str(bad))
    assert (refusal.returncode, refusal.stderr.strip()) == (
        2,
        "error: BAD_REQUEST: conversation: title must be a non-empty string of at most 200 characters",
    )
    looping = tmp_path / "cycle.json"
    looping.write_bytes(chatgpt_with(cycle))
    refusal = sophos("import", str(looping))
    assert (refusal.returncode, refusal.stderr.strip()) == (
        2,
        'error: BAD_REQUEST: conversation 1: mapping["u2"].parent: its parents go round in a cycle',
    )
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    refusal = sophos("import", str(empty))
    assert (refusal.returncode, refusal.stderr.strip()) == (2, f"error: BAD_REQUEST: {NOTHING}")
    imported = sophos("import", str(FIXTURE))
    assert imported.returncode == 0, imported.stderr
    assert "Planning a trip" in imported.stdout and "imported 2 conversation(s)" in imported.stderr
    out = tmp_path / "out"
    out.mkdir()
    assert sophos("export", "--all", "-o", str(out)).returncode == 0
    [archive] = list(out.glob("sophos-export-*.zip"))
    assert sorted(zipfile.ZipFile(archive).namelist()) == ["planning-a-trip-2024-05-01.json", "weather-in-paris-2024-05-02.json"]
    again = sophos("import", str(archive), "--json")
    assert len(json.loads(again.stdout)["conversations"]) == 2
    assert len(json.loads(sophos("conversations", "--json").stdout)["conversations"]) == 4
    weather = next(c for c in json.loads(again.stdout)["conversations"] if c["title"] == "Weather in Paris")
    md = sophos("export", weather["id"][:8], "-o", str(out))
    assert md.returncode == 0, md.stderr
    assert (out / "weather-in-paris-2024-05-02.md").read_text().startswith("# Weather in Paris")
