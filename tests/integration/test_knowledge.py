"""Knowledge collections (issue 45 item 3) on a server with two users, on both backends:
files uploaded through the API and the CLI are chunked and indexed, a message naming a
collection (`#name`) is sent with its best passages under their citations, and the reply
records what was cited; another user's collection answers as an unknown one (404)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from tests.integration.test_langgraph_api import wait_up
from tests.integration.test_users_server import add_user, sophos
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.server import LiveServer, free_port

GUIDE = "# Keeping the light\n\nThe lighthouse keeper winds the clockwork at dusk.\nThe lamp burns paraffin.\n"
FILLER = "".join(f"Row {i}: bread, flour and water are weighed at the bakery.\n" for i in range(300))


def answer(body: dict[str, Any]) -> dict[str, Any]:
    text = body["messages"][-1]["content"]
    if "[guide.md:" in text:
        return {"text": "The keeper winds the clockwork at dusk [guide.md:1-4]."}
    return {"text": "I found nothing."}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def server(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[LiveServer, dict[str, str], FakeOllama, dict[str, str], str]]:
    lg_port = free_port()
    database = {"DATABASE_URL": request.getfixturevalue("pg_url")} if request.param == "postgres" else {}
    with fake_ollama() as fake:
        fake.responder = answer
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none", LANGGRAPH_API_PORT=str(lg_port), **database)
        tokens = {name: add_user(env, name)[1] for name in ("ann", "bob")}
        live = LiveServer(env, tmp_path).start()
        try:
            wait_up(f"http://127.0.0.1:{lg_port}/ok")
            yield live, env, fake, tokens, f"http://127.0.0.1:{lg_port}"
        finally:
            live.stop()


def ask(lg_url: str, token: str, text: str) -> str:
    client = get_sync_client(url=lg_url, api_key=token)
    thread = client.threads.create()["thread_id"]
    done = client.runs.wait(thread, "agent", input={"messages": [{"type": "human", "content": text}]})
    assert isinstance(done, dict), done
    return str(thread)


def test_a_collection_named_in_a_message_sends_its_best_passages_and_is_cited(
    server: tuple[LiveServer, dict[str, str], FakeOllama, dict[str, str], str], tmp_path: Path
) -> None:
    live, env, fake, tokens, lg_url = server
    ann = httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {tokens['ann']}"})
    bob = httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {tokens['bob']}"})
    files = [("files", ("guide.md", GUIDE.encode(), "text/markdown")), ("files", ("bakery.csv", FILLER.encode(), "text/csv"))]
    added = ann.post("/api/knowledge/lights/files", files=files)
    assert added.status_code == 200, added.text
    assert [(a["name"], a["outcome"]) for a in added.json()["files"]] == [("guide.md", "added"), ("bakery.csv", "added")]
    assert ann.get("/api/knowledge").json()["collections"][0]["name"] == "lights"

    # the same bytes again change nothing; under another name they are a duplicate
    again = ann.post("/api/knowledge/lights/files", files=[("files", ("guide.md", GUIDE.encode(), "text/markdown"))])
    twin = ann.post("/api/knowledge/lights/files", files=[("files", ("copy.md", GUIDE.encode(), "text/markdown"))])
    assert again.json()["files"][0]["outcome"] == "unchanged"
    assert twin.json()["files"][0] == {"name": "copy.md", "outcome": "duplicate", "passages": 0, "sameAs": "guide.md"}

    # bob: every route answers as for a collection that does not exist
    for method, path in (
        ("GET", "/api/knowledge/lights/files"),
        ("DELETE", "/api/knowledge/lights/files/guide.md"),
        ("GET", "/api/knowledge/lights/files/guide.md/passage?lines=1-4"),
        ("DELETE", "/api/knowledge/lights"),
    ):
        theirs, unknown = bob.request(method, path), bob.request(method, path.replace("lights", "nothing"))
        assert theirs.status_code == unknown.status_code == 404 and theirs.json() == unknown.json(), (method, path)
    assert bob.get("/api/knowledge").json() == {"collections": []}

    # bob's #lights names nothing of his: no passage of ann's reaches his model request
    before = len(fake.requests)
    ask(lg_url, tokens["bob"], "#lights when does the keeper wind the clockwork?")
    assert all("paraffin" not in json.dumps(r) for r in fake.requests[before:])

    before = len(fake.requests)
    thread = ask(lg_url, tokens["ann"], "#lights when does the keeper wind the clockwork?")
    sent = fake.requests[before]["messages"][-1]["content"]
    assert "[guide.md:1-4] (#lights)\n# Keeping the light" in sent and "winds the clockwork at dusk" in sent
    assert "Row 12: bread" not in sent  # the bakery's passages do not match
    detail = ann.get(f"/api/conversations/{thread}").json()
    reply = detail["messages"][-1]
    assert reply["content"].endswith("[guide.md:1-4].")
    assert detail["context"]["cited"] == reply["cited"] == [{"collection": "lights", "file": "guide.md", "first": 1, "last": 4}]
    passage = ann.get("/api/knowledge/lights/files/guide.md/passage", params={"lines": "1-4"}).json()
    assert "winds the clockwork" in passage["passages"][0]["text"]

    # replaced: re-indexed, the old words gone
    new = "# Keeping the light\n\nThe keeper now uses an electric lamp.\n"
    replaced = ann.post("/api/knowledge/lights/files", files=[("files", ("guide.md", new.encode(), "text/markdown"))])
    assert replaced.json()["files"][0]["outcome"] == "replaced"
    before = len(fake.requests)
    ask(lg_url, tokens["ann"], "#lights what about paraffin and the electric lamp?")
    sent = fake.requests[before]["messages"][-1]["content"]
    passages = sent.split("\n\n", 1)[1]
    assert "electric lamp" in passages and "paraffin" not in passages

    # the CLI, on the server as ann and as bob; then locally on the file
    doc = tmp_path / "notes.txt"
    doc.write_text("The fog horn sounds every thirty seconds.\n")
    done = sophos(env, "knowledge", "add", "lights", str(doc), "--server", live.url, API_TOKEN=tokens["ann"])
    assert done.returncode == 0 and "added\tnotes.txt\t1 passages" in done.stdout, done.stderr
    listed = sophos(env, "knowledge", "list", "lights", "--json", "--server", live.url, API_TOKEN=tokens["ann"])
    assert sorted(f["name"] for f in json.loads(listed.stdout)["files"]) == ["bakery.csv", "guide.md", "notes.txt"]
    theirs = sophos(env, "knowledge", "remove", "lights", "notes.txt", "--server", live.url, API_TOKEN=tokens["bob"])
    assert theirs.returncode == 3 and "No such" in theirs.stderr
    gone = sophos(env, "knowledge", "remove", "lights", "--yes", "--server", live.url, API_TOKEN=tokens["ann"])
    assert gone.returncode == 0, gone.stderr
    assert ann.get("/api/knowledge").json() == {"collections": []}


def test_hostile_uploads_get_clear_refusals(
    server: tuple[LiveServer, dict[str, str], FakeOllama, dict[str, str], str],
) -> None:
    live, _, _, tokens, _ = server
    ann = httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {tokens['ann']}"})
    bad_name = ann.post("/api/knowledge/Bad Name!/files", files=[("files", ("a.md", b"x", "text/markdown"))])
    assert bad_name.status_code == 400 and bad_name.json()["error"]["code"] == "BAD_REQUEST"
    binary = ann.post("/api/knowledge/docs/files", files=[("files", ("a.bin", b"\x00\x01\xff", "application/octet-stream"))])
    assert binary.status_code in (415, 422), binary.text
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
    image = ann.post("/api/knowledge/docs/files", files=[("files", ("a.png", png, "image/png"))])
    assert 400 <= image.status_code < 500, image.text
    not_form = ann.post("/api/knowledge/docs/files", json={"files": []})
    assert not_form.status_code == 400
    create = ann.post("/api/knowledge", json={"name": "docs"})
    assert create.status_code in (200, 201) and ann.post("/api/knowledge", json={"name": "docs"}).status_code == 200
    lines = ann.get("/api/knowledge/docs/files/a.md/passage", params={"lines": "x"})
    assert lines.status_code in (400, 404)
