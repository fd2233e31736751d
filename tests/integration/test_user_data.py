"""A user's export and import carry what they keep besides conversations (issue 45 item 5):
the export-all zip holds their store items (memories among them) and knowledge collections,
an import stores them back for the importing user, and `sophos users delete` removes a user
with all of it; on both backends, with two users."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator

import httpx
from langgraph_sdk import get_sync_client

from tests.integration.test_knowledge import GUIDE, ask
from tests.integration.test_knowledge import server as knowledge_server
from tests.integration.test_users_server import sophos
from tests.support.fake_ollama import FakeOllama
from tests.support.server import LiveServer

server = knowledge_server  # the same two users on each backend
Served = tuple[LiveServer, dict[str, str], FakeOllama, dict[str, str], str]


def clients(live: LiveServer, tokens: dict[str, str]) -> Iterator[httpx.Client]:
    for name in ("ann", "bob"):
        yield httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {tokens[name]}"}, timeout=30)


def test_an_export_carries_memories_and_collections_and_an_import_stores_them_back(server: Served) -> None:
    live, env, fake, tokens, lg_url = server
    ann, bob = clients(live, tokens)
    get_sync_client(url=lg_url, api_key=tokens["ann"]).store.put_item(["memories"], "m1", {"text": "ann likes tea"})
    assert ann.post("/api/knowledge/lights/files", files=[("files", ("guide.md", GUIDE.encode(), "text/markdown"))]).is_success
    ask(lg_url, tokens["ann"], "#lights when does the keeper wind the clockwork?")

    exported = ann.get("/api/export")
    assert exported.status_code == 200
    with zipfile.ZipFile(io.BytesIO(exported.content)) as z:
        user = json.loads(z.read("sophos-user.json"))
        assert len([n for n in z.namelist() if n != "sophos-user.json"]) == 1  # the conversation
    assert user["format"] == "sophos.user" and [i["value"] for i in user["items"]] == [{"text": "ann likes tea"}]
    assert [(c["name"], [f["name"] for f in c["files"]]) for c in user["collections"]] == [("lights", ["guide.md"])]

    # bob imports ann's file: it becomes his own (his memories, his collection), ann's unchanged
    imported = bob.post("/api/import", content=exported.content)
    assert imported.status_code == 201, imported.text
    assert (imported.json()["items"], imported.json()["collections"], len(imported.json()["conversations"])) == (1, 1, 1)
    assert [m["text"] for m in bob.get("/api/memory").json()["memories"]] == ["ann likes tea"]
    assert [c["name"] for c in bob.get("/api/knowledge").json()["collections"]] == ["lights"]
    before = len(fake.requests)
    ask(lg_url, tokens["bob"], "#lights when does the keeper wind the clockwork?")
    assert "winds the clockwork at dusk" in fake.requests[before]["messages"][-1]["content"]  # indexed as exported

    # imported again: the same items and files, once
    assert bob.post("/api/import", content=exported.content).status_code == 201
    assert len(bob.get("/api/memory").json()["memories"]) == 1
    assert bob.get("/api/knowledge").json()["collections"][0]["files"] == 1

    # a malformed user file stores nothing and says why
    bad = json.dumps({"format": "sophos.user", "version": 1, "collections": [{"name": "Bad Name", "files": []}]})
    refused = bob.post("/api/import", content=bad.encode())
    assert refused.status_code == 400 and "collection" in refused.json()["error"]["message"]


def test_deleting_a_user_deletes_their_memories_collections_and_conversations(server: Served) -> None:
    live, env, fake, tokens, lg_url = server
    ann, bob = clients(live, tokens)
    get_sync_client(url=lg_url, api_key=tokens["ann"]).store.put_item(["memories"], "m1", {"text": "ann likes tea"})
    get_sync_client(url=lg_url, api_key=tokens["bob"]).store.put_item(["memories"], "m1", {"text": "bob likes coffee"})
    for client in (ann, bob):
        assert client.post(
            "/api/knowledge/lights/files", files=[("files", ("guide.md", GUIDE.encode(), "text/markdown"))]
        ).is_success
    ask(lg_url, tokens["ann"], "hello")
    ask(lg_url, tokens["bob"], "hello")

    unconfirmed = sophos(env, "users", "delete", "ann")
    assert unconfirmed.returncode != 0 and ann.get("/api/knowledge").status_code == 200  # asked, not confirmed
    done = sophos(env, "users", "delete", "ann", "--yes")
    assert done.returncode == 0, done.stderr
    assert "1 conversations" in done.stdout and "1 collections" in done.stdout, done.stdout
    assert ann.get("/api/knowledge").status_code == 401  # the token went with the user
    listed = sophos(env, "users", "list", "--json")
    assert "ann" not in [u["name"] for u in json.loads(listed.stdout)]
    audit = sophos(env, "audit", "--json")
    assert "user.delete" in audit.stdout, audit.stdout
    # bob's are untouched
    assert [m["text"] for m in bob.get("/api/memory").json()["memories"]] == ["bob likes coffee"]
    assert [c["name"] for c in bob.get("/api/knowledge").json()["collections"]] == ["lights"]
    assert len(bob.get("/api/conversations").json()["conversations"]) == 1
    missing = sophos(env, "users", "delete", "nobody", "--yes")
    assert missing.returncode == 3
