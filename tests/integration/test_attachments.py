"""Attachments through the HTTP API on a real SQLite file, against the fake Ollama and the
fake OpenAI server: what the model server receives (an image in its own format, a text
file as a fenced block within the budget), what is stored (once per file, with the
message, gone with the conversation) and what bad input gets (a clear 4xx, nothing stored)."""

from __future__ import annotations

import base64
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from domain.attachments import MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS, digest_of
from entrypoints.container import create_container
from entrypoints.http.app import create_app
from tests.integration.test_model_choice import events, turn
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import fake_openai
from tests.support.files import pdf, png, png_claiming

PNG = png()
CSV = b"city,people\nLyon,522250\nNantes,320732\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def attached(name: str, kind: str, data: bytes) -> dict[str, str]:
    return {"name": name, "type": kind, "data": b64(data)}


def rows(tmp_path: Path, sql: str) -> list[Any]:
    with sqlite3.connect(tmp_path / "db" / "sophos.db") as conn:
        return conn.execute(sql).fetchall()


@pytest.fixture
def models(ollama: FakeOllama) -> FakeOllama:
    ollama.latency = 0.0
    ollama.models = ("qwen3:latest", "llama3.2:latest", "llava:7b")
    ollama.capabilities = {"llava:7b": ["vision"]}
    ollama.contexts = {"llama3.2:latest": 2048}
    return ollama


def test_an_image_reaches_ollama_as_its_images_field_and_is_served_back(client: TestClient, models: FakeOllama) -> None:
    cid, _ = turn(
        client, {"message": "what is this?", "model": "llava:7b", "attachments": [attached("red dot.png", "image/png", PNG)]}
    )
    user = models.requests[-1]["messages"][-1]
    # ChatOllama joins a multi-part message's text parts each after a newline
    assert user["role"] == "user" and user["content"] == "\nwhat is this?"
    assert user["images"] == [b64(PNG)]  # Ollama's own format: base64, no data URL
    message = client.get(f"/api/conversations/{cid}").json()["messages"][0]
    assert message["attachments"] == [{"name": "red dot.png", "type": "image/png", "size": len(PNG), "digest": digest_of(PNG)}]
    served = client.get(f"/api/conversations/{cid}/attachments/{digest_of(PNG)}")
    assert served.status_code == 200 and served.content == PNG
    assert served.headers["content-type"] == "image/png" and served.headers["x-content-type-options"] == "nosniff"
    assert served.headers["content-security-policy"] == "default-src 'none'; sandbox"
    assert served.headers["content-disposition"].startswith('inline; filename="red dot.png"')
    assert served.headers["cache-control"] == "no-store"  # never outlives a log-out in a shared browser


def test_a_text_file_reaches_the_model_as_a_fenced_block_and_a_large_one_within_the_budget(
    client: TestClient, models: FakeOllama
) -> None:
    turn(client, {"message": "sum the people", "attachments": [attached("cities.csv", "text/csv", CSV)]})
    sent = models.requests[-1]["messages"][-1]["content"]
    assert sent == "sum the people\n\ncities.csv:\n```\n" + CSV.decode() + "\n```"
    # llama3.2 reports 2048 tokens: a 200 KB file is searched, its passages that match the
    # message sent under a note that says so (issue 45: never cut silently)
    lines = [f"line {i:06d} of the log" for i in range(8000)]
    lines[5321] = "line 005321 quota exceeded on /var"
    big = "\n".join(lines).encode()
    cid, seen = turn(
        client,
        {
            "message": "why was the quota exceeded?",
            "model": "llama3.2",
            "attachments": [attached("server.log", "text/plain", big)],
        },
    )
    sent = models.requests[-1]["messages"][-1]["content"]
    assert sent.startswith("why was the quota exceeded?\n\nserver.log:\n```\n[server.log was searched, not read whole:")
    assert "line 005321 quota exceeded on /var" in sent and "of 8000]" in sent
    assert "characters left out" not in sent and len(sent) < 1100  # its share of a 2,048-token window
    context = next(d["data"] for n, d in seen if n == "trace" and d["event"] == "context")
    assert context["tokens"] <= context["budget"] == 2048 - 1024
    # the next turn sends the file again (it is part of the conversation), as shortened
    turn(client, {"message": "and now?", "conversation": cid})
    assert models.requests[-1]["messages"][-3]["content"] == sent


def test_a_pdf_reaches_the_model_as_its_text(client: TestClient, models: FakeOllama) -> None:
    turn(
        client,
        {"message": "summarise", "attachments": [attached("report.pdf", "application/pdf", pdf("Revenue grew by 12 percent"))]},
    )
    sent = models.requests[-1]["messages"][-1]["content"]
    assert "report.pdf:\n```\nRevenue grew by 12 percent\n```" in sent


def test_the_same_file_twice_is_stored_once_and_goes_with_the_last_conversation(
    client: TestClient, models: FakeOllama, tmp_path: Path
) -> None:
    body = {"message": "look", "attachments": [attached("cities.csv", "text/csv", CSV)]}
    a, _ = turn(client, body)
    turn(client, {**body, "conversation": a})
    b, _ = turn(client, body)
    assert rows(tmp_path, "SELECT digest, size FROM attachment_blobs") == [(digest_of(CSV), len(CSV))]
    assert sorted(rows(tmp_path, "SELECT conversation_id FROM attachment_refs")) == sorted([(a,), (b,)])
    assert client.delete(f"/api/conversations/{a}").status_code == 204
    assert len(rows(tmp_path, "SELECT digest FROM attachment_blobs")) == 1  # b still holds it
    assert client.get(f"/api/conversations/{a}/attachments/{digest_of(CSV)}").status_code == 404
    assert client.delete(f"/api/conversations/{b}").status_code == 204
    assert rows(tmp_path, "SELECT count(*) FROM attachment_blobs") == [(0,)]


def test_a_file_of_another_conversation_is_not_served(client: TestClient, models: FakeOllama) -> None:
    a, _ = turn(client, {"message": "look", "attachments": [attached("cities.csv", "text/csv", CSV)]})
    b, _ = turn(client, {"message": "nothing attached"})
    assert client.get(f"/api/conversations/{b}/attachments/{digest_of(CSV)}").status_code == 404
    assert client.get(f"/api/conversations/{a}/attachments/not-a-digest").status_code == 400
    served = client.get(f"/api/conversations/{a}/attachments/{digest_of(CSV)}")
    assert served.headers["content-type"] == "text/plain; charset=utf-8" and served.content == CSV


def test_a_conversation_is_found_by_its_files_name(client: TestClient, models: FakeOllama) -> None:
    cid, _ = turn(client, {"message": "see attached", "attachments": [attached("quarterly-figures.csv", "text/csv", CSV)]})
    hits = client.get("/api/search?q=quarterly").json()["results"]
    assert [(h["conversation"], h["messageIndex"]) for h in hits] == [(cid, 0)]


def test_a_files_name_loses_its_path_and_invisible_characters(client: TestClient, models: FakeOllama) -> None:
    cid, _ = turn(
        client, {"message": "x", "model": "llava:7b", "attachments": [attached("C:\\Users\\me/\u202egnp.exe", "image/png", PNG)]}
    )
    message = client.get(f"/api/conversations/{cid}").json()["messages"][0]
    assert message["attachments"][0]["name"] == "gnp.exe"  # as it reads: the override is gone


def test_a_message_of_files_only_is_titled_by_its_first_file(client: TestClient, models: FakeOllama) -> None:
    cid, _ = turn(client, {"attachments": [attached("cities.csv", "text/csv", CSV)]})
    detail = client.get(f"/api/conversations/{cid}").json()
    assert detail["conversation"]["title"] == "cities.csv"
    assert models.requests[-1]["messages"][-1]["content"] == "cities.csv:\n```\n" + CSV.decode() + "\n```"


def test_multipart_form_data_is_taken_as_json_with_base64_is(client: TestClient, models: FakeOllama) -> None:
    response = client.post(
        "/api/chat",
        data={"message": "what is this?", "model": "llava:7b"},
        files=[("attachments", ("dot.png", PNG, "image/png")), ("attachments", ("c.csv", CSV, "text/csv"))],
    )
    assert response.status_code == 200, response.text
    cid = response.json()["conversation"]
    from tests.integration.test_model_choice import events

    assert events(client, cid)[-1][0] == "end"
    user = models.requests[-1]["messages"][-1]
    assert user["images"] == [b64(PNG)] and user["content"].startswith("\nwhat is this?\n\nc.csv:\n```\ncity,people")
    names = [a["name"] for a in client.get(f"/api/conversations/{cid}").json()["messages"][0]["attachments"]]
    assert names == ["dot.png", "c.csv"]


BROKEN_PNG = PNG[:8] + b"\x00\x00\x00\x0dXXXX" + PNG[16:]


@pytest.mark.parametrize(
    ("body", "status", "code", "words"),
    [
        (
            {"attachments": [attached("big.txt", "text/plain", b"x" * (MAX_ATTACHMENT_BYTES + 1))]},
            413,
            "ATTACHMENT_TOO_LARGE",
            "larger than 10 MB",
        ),
        (
            {"attachments": [attached("setup.exe", "application/x-msdownload", b"MZ\x90\x00")]},
            415,
            "ATTACHMENT_TYPE_NOT_ALLOWED",
            "not a file type Sophos accepts",
        ),
        (
            {"attachments": [attached("logo.svg", "image/svg+xml", b"<svg onload=alert(1)/>")]},
            415,
            "ATTACHMENT_TYPE_NOT_ALLOWED",
            "image/svg+xml",
        ),
        ({"attachments": [attached("photo.png", "image/png", BROKEN_PNG)]}, 400, "ATTACHMENT_UNREADABLE", "not a readable PNG"),
        ({"attachments": [attached("photo.jpg", "image/jpeg", PNG)]}, 400, "ATTACHMENT_UNREADABLE", "not a readable JPEG"),
        # 69 bytes claiming 65535 x 65535 (17 GB of pixels for whoever decodes it)
        (
            {"attachments": [attached("huge.png", "image/png", png_claiming(65535, 65535))]},
            400,
            "ATTACHMENT_UNREADABLE",
            "huge.png: a 65535×65535 image is larger than Sophos reads (at most 40 megapixels",
        ),
        (
            {"attachments": [attached("report.pdf", "application/pdf", b"%PDF-1.4\ngarbage")]},
            400,
            "ATTACHMENT_UNREADABLE",
            "report.pdf: the PDF cannot be read",
        ),
        ({"attachments": [attached("scan.pdf", "application/pdf", pdf(""))]}, 400, "ATTACHMENT_UNREADABLE", "no text"),
        (
            {"attachments": [attached("latin1.txt", "text/plain", "café".encode("latin-1"))]},
            400,
            "ATTACHMENT_UNREADABLE",
            "not UTF-8",
        ),
        (
            {"attachments": [attached(f"f{i}.txt", "text/plain", b"x") for i in range(MAX_ATTACHMENTS + 1)]},
            400,
            "TOO_MANY_ATTACHMENTS",
            f"at most {MAX_ATTACHMENTS} files",
        ),
        (
            {"attachments": [{"name": "a.txt", "type": "text/plain", "data": "not base64!"}]},
            400,
            "ATTACHMENT_UNREADABLE",
            "not base64",
        ),
        (
            {"attachments": [{"name": "a.txt", "data": b64(b"x"), "path": "/etc/passwd"}]},
            400,
            "BAD_REQUEST",
            "{name, type, data}",
        ),
        ({"attachments": "a.txt"}, 400, "BAD_REQUEST", "must be a list"),
        ({"attachments": [attached("dot.png", "image/png", PNG)]}, 400, "MODEL_CANNOT_SEE", "qwen3 cannot read images"),
        (
            {"attachments": [attached("a.txt", "text/plain", b"x")], "multitask": "enqueue"},
            400,
            "BAD_REQUEST",
            "cannot be queued",
        ),
    ],
)
def test_bad_files_get_a_clear_4xx_and_nothing_is_stored(
    client: TestClient, models: FakeOllama, tmp_path: Path, body: dict[str, Any], status: int, code: str, words: str
) -> None:
    response = client.post("/api/chat", json={"message": "look", **body})
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and words in error["message"], error
    assert client.get("/api/conversations").json()["conversations"] == []
    assert models.requests == []
    assert rows(tmp_path, "SELECT count(*) FROM attachment_blobs") == [(0,)]


@pytest.mark.parametrize(
    ("body", "status", "code", "words"),
    [
        ({"attachments": [attached("notes.txt", "text/plain", b"x" * 2049)]}, 413, "ATTACHMENT_TOO_LARGE", "larger than 2 KB"),
        (
            {"attachments": [attached("dot.png", "image/png", PNG)]},
            415,
            "ATTACHMENT_TYPE_NOT_ALLOWED",
            "image/png is not a file type this server accepts (text/csv, text/markdown)",
        ),
        ({"attachments": [attached("a.txt", "text/plain", b"x")]}, 415, "ATTACHMENT_TYPE_NOT_ALLOWED", "text/plain"),
        (
            {"attachments": [attached(f"f{i}.csv", "text/csv", b"a,b") for i in range(3)]},
            400,
            "TOO_MANY_ATTACHMENTS",
            "at most 2 files",
        ),
    ],
)
def test_the_limits_and_types_are_settings_the_api_and_the_page_read(
    make_client: Any, models: FakeOllama, tmp_path: Path, body: dict[str, Any], status: int, code: str, words: str
) -> None:
    client = make_client(MAX_ATTACHMENT_BYTES=2048, MAX_ATTACHMENTS=2, ATTACHMENT_TYPES="text/csv, text/markdown")
    response = client.post("/api/chat", json={"message": "look", **body})
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and words in error["message"], error
    assert models.requests == [] and rows(tmp_path, "SELECT count(*) FROM attachment_blobs") == [(0,)]
    listed = client.get("/api/models").json()["attachments"]
    assert listed == {"maxBytes": 2048, "maxFiles": 2, "types": ["text/csv", "text/markdown"], "shown": "text/csv, text/markdown"}
    schema = client.get("/api/openapi.json").json()["paths"]["/api/chat"]["post"]["requestBody"]
    assert schema["content"]["application/json"]["schema"]["properties"]["attachments"]["maxItems"] == 2
    # what the settings allow goes through, by JSON and by multipart
    cid, _ = turn(client, {"message": "sum it", "attachments": [attached("c.csv", "text/csv", b"x" * 2048)]})
    files = [("attachments", ("n.md", b"# two", "text/markdown")), ("attachments", ("c.csv", CSV, "text/csv"))]
    response = client.post("/api/chat", data={"message": "and these", "conversation": cid}, files=files)
    assert response.status_code == 200, response.text
    assert events(client, cid)[-1][0] == "end"
    names = [[a["name"] for a in m.get("attachments", [])] for m in client.get(f"/api/conversations/{cid}").json()["messages"]]
    assert names == [["c.csv"], [], ["n.md", "c.csv"], []]


def test_attachments_off_refuses_any_file(make_client: Any, models: FakeOllama) -> None:
    client = make_client(MAX_ATTACHMENTS=0)
    response = client.post("/api/chat", json={"message": "look", "attachments": [attached("a.txt", "text/plain", b"x")]})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"] == "This server accepts no attachments (MAX_ATTACHMENTS is 0)"
    assert client.get("/api/models").json()["attachments"]["maxFiles"] == 0


def test_an_oversized_multipart_body_is_refused_while_it_arrives(client: TestClient, models: FakeOllama) -> None:
    files = [("attachments", (f"f{i}.txt", b"x" * (MAX_ATTACHMENT_BYTES + 1), "text/plain")) for i in range(2)]
    response = client.post("/api/chat", data={"message": "look"}, files=files)
    assert response.status_code == 413 and response.json()["error"]["code"] == "ATTACHMENT_TOO_LARGE"
    assert client.get("/api/conversations").json()["conversations"] == []


def test_a_large_body_without_files_is_still_refused_at_64_kb(client: TestClient, models: FakeOllama) -> None:
    response = client.post("/api/chat", json={"message": "x" * 70_000})
    assert response.status_code == 413 and "65536 bytes" in response.json()["error"]["message"]


CHUNK = 16 * 1024


def send_counted(client: TestClient, chunks: Iterator[bytes], headers: dict[str, str] | None = None) -> tuple[Any, int]:
    """POST /api/chat with a body sent chunk by chunk as the server asks for it: the answer
    and how many bytes the server took before answering."""
    taken = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal taken
        for chunk in chunks:
            taken += len(chunk)
            yield chunk

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=client.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            return await http.post("/api/chat", content=body(), headers={"content-type": "application/json", **(headers or {})})

    return client.portal.call(post), taken


def endless(head: bytes, filler: bytes) -> Iterator[bytes]:
    yield head
    while True:
        yield filler * (CHUNK // len(filler))


def test_a_large_body_without_files_is_refused_once_past_64_kb_not_read_whole(client: TestClient, models: FakeOllama) -> None:
    """Files may make a body ~107 MB; one without them is refused as it passes 64 KiB."""
    response, taken = send_counted(client, endless(b'{"message": "', b"x"))
    assert response.status_code == 413 and "65536 bytes" in response.json()["error"]["message"], response.text
    assert taken <= 64 * 1024 + 2 * CHUNK, taken


def test_a_body_declared_larger_than_any_message_may_be_is_refused_before_it_is_read(
    client: TestClient, models: FakeOllama
) -> None:
    limit = client.get("/api/models").json()["attachments"]
    most = limit["maxFiles"] * (limit["maxBytes"] * 4 // 3 + 1024) + 64 * 1024
    response, taken = send_counted(
        client, endless(b'{"message": "hi", "attachments": ["', b"A"), headers={"content-length": str(most + 1)}
    )
    assert response.status_code == 413, response.text
    assert taken == 0


def test_a_large_body_of_many_small_values_is_refused_before_it_is_parsed(client: TestClient, models: FakeOllama) -> None:
    """Past 64 KiB, the bulk must be the files' base64 text: a million values would cost
    far more memory to parse than their bytes."""
    body = b'{"message": "hi", "attachments": [' + b"[]," * 1_000_000 + b"[]]}"
    response = client.post("/api/chat", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 413, response.text
    assert client.get("/api/conversations").json()["conversations"] == []


@pytest.fixture
def openai_client(tmp_path: Path) -> Iterator[tuple[TestClient, Any]]:
    with fake_openai() as fake:
        env = app_env(tmp_path, TOOLS_BACKEND="none", MODEL_BACKEND="openai", OPENAI_BASE_URL=fake.url)
        with TestClient(create_app(create_container(env))) as client:
            yield client, fake


def test_an_image_reaches_an_openai_server_as_an_image_url_part(openai_client: tuple[TestClient, Any]) -> None:
    client, fake = openai_client
    turn(
        client,
        {"message": "what is this?", "attachments": [attached("dot.png", "image/png", PNG), attached("c.csv", "text/csv", CSV)]},
    )
    user = fake.requests[-1]["messages"][-1]
    assert user["role"] == "user"
    text, image = user["content"]
    assert text == {"type": "text", "text": "what is this?\n\nc.csv:\n```\n" + CSV.decode() + "\n```"}
    assert image == {"type": "image_url", "image_url": {"url": "data:image/png;base64," + b64(PNG)}}


def test_the_json_export_holds_the_files_and_an_import_brings_them_back(client: TestClient, models: FakeOllama) -> None:
    cid, _ = turn(
        client,
        {
            "message": "look",
            "model": "llava:7b",
            "attachments": [
                attached("cities.csv", "text/csv", CSV),
                attached("dot.png", "image/png", PNG),
                attached("report.pdf", "application/pdf", pdf("Revenue grew")),
            ],
        },
    )
    exported = client.get(f"/api/conversations/{cid}/export?format=json")
    doc = exported.json()
    files = {f["name"]: f for f in doc["conversation"]["attachments"]}
    assert base64.b64decode(files["dot.png"]["data"]) == PNG and files["dot.png"]["digest"] == digest_of(PNG)
    assert doc["conversation"]["branches"][0]["messages"][0]["attachments"][0]["name"] == "cities.csv"
    markdown = client.get(f"/api/conversations/{cid}/export").text
    assert f"- Attached: `dot.png` (image/png, {len(PNG):,} bytes)" in markdown
    imported = client.post("/api/import", content=exported.content)
    assert imported.status_code == 201, imported.text
    new = imported.json()["conversations"][0]["id"]
    names = [a["name"] for a in client.get(f"/api/conversations/{new}").json()["messages"][0]["attachments"]]
    assert names == ["cities.csv", "dot.png", "report.pdf"]
    assert client.get(f"/api/conversations/{new}/attachments/{digest_of(PNG)}").content == PNG
    client.delete(f"/api/conversations/{cid}")
    turn(client, {"message": "and the pdf?", "conversation": new})  # the imported files reach the model
    sent = models.requests[-1]["messages"][1]
    assert sent["images"] == [b64(PNG)] and "report.pdf:\n```\nRevenue grew\n```" in sent["content"]


def test_a_file_only_a_branch_left_behind_carries_is_imported_with_it(client: TestClient, models: FakeOllama) -> None:
    cid, _ = turn(client, {"message": "look", "attachments": [attached("cities.csv", "text/csv", CSV)]})
    doc = client.get(f"/api/conversations/{cid}/export?format=json").json()
    doc["conversation"]["branches"].append(  # an edit of the first message, without the file, active
        {"number": 2, "parent": None, "fork": 0, "messages": [{"role": "user", "content": "never mind"}]}
    )
    doc["conversation"]["activeBranch"] = 2
    imported = client.post("/api/import", json=doc)
    assert imported.status_code == 201, imported.text
    new = imported.json()["conversations"][0]["id"]
    assert client.get(f"/api/conversations/{new}/attachments/{digest_of(CSV)}").content == CSV
    again = client.get(f"/api/conversations/{new}/export?format=json").json()
    assert [f["name"] for f in again["conversation"]["attachments"]] == ["cities.csv"]


def test_an_export_whose_file_does_not_match_its_digest_imports_nothing(
    client: TestClient, models: FakeOllama, tmp_path: Path
) -> None:
    cid, _ = turn(client, {"message": "look", "attachments": [attached("cities.csv", "text/csv", CSV)]})
    doc = client.get(f"/api/conversations/{cid}/export?format=json").json()
    doc["conversation"]["attachments"][0]["data"] = b64(b"other,text\n")
    refused = client.post("/api/import", json=doc)
    assert refused.status_code == 400 and "digest is not the SHA-256 of its data" in refused.json()["error"]["message"]
    del doc["conversation"]["attachments"]
    refused = client.post("/api/import", json=doc)
    assert refused.status_code == 400 and "names a file the export does not hold" in refused.json()["error"]["message"]
    assert len(client.get("/api/conversations").json()["conversations"]) == 1


def test_a_fork_holds_its_messages_files_and_keeps_them_when_the_source_goes(
    client: TestClient, models: FakeOllama, tmp_path: Path
) -> None:
    source, _ = turn(client, {"message": "look", "model": "llava:7b", "attachments": [attached("dot.png", "image/png", PNG)]})
    forked = client.post(f"/api/conversations/{source}/fork", json={"messageIndex": 1})
    assert forked.status_code == 201, forked.text
    fork = forked.json()["conversation"]["id"]
    assert client.delete(f"/api/conversations/{source}").status_code == 204
    assert client.get(f"/api/conversations/{fork}/attachments/{digest_of(PNG)}").content == PNG
    assert rows(tmp_path, "SELECT conversation_id FROM attachment_refs") == [(fork,)]
    turn(client, {"message": "and again?", "conversation": fork})
    assert models.requests[-1]["messages"][1]["images"] == [b64(PNG)]


def test_an_edited_message_keeps_its_files(client: TestClient, models: FakeOllama) -> None:
    cid, _ = turn(client, {"message": "sum it", "attachments": [attached("cities.csv", "text/csv", CSV)]})
    response = client.post("/api/chat", json={"conversation": cid, "message": "count the rows", "editOf": 0})
    assert response.status_code == 200, response.text
    from tests.integration.test_model_choice import events

    assert events(client, cid)[-1][0] == "end"
    assert models.requests[-1]["messages"][-1]["content"] == "count the rows\n\ncities.csv:\n```\n" + CSV.decode() + "\n```"
    edited = client.get(f"/api/conversations/{cid}").json()["messages"][0]
    assert edited["content"] == "count the rows" and [a["name"] for a in edited["attachments"]] == ["cities.csv"]


@pytest.mark.parametrize(
    ("headers", "content"),
    [
        ({"content-type": "multipart/form-data; boundary=x"}, b'--x\r\nContent-Disposition: form-data; name="message"\r\n\r\nhi'),
        ({"content-type": "multipart/form-data"}, b"no boundary at all"),
        (
            {"content-type": "multipart/form-data; boundary=x"},
            b'--x\r\nContent-Disposition: form-data; name="other"; filename="a.txt"\r\n\r\nhi\r\n--x--\r\n',
        ),
    ],
)
def test_a_malformed_multipart_body_is_a_400(
    client: TestClient, models: FakeOllama, headers: dict[str, str], content: bytes
) -> None:
    response = client.post("/api/chat", headers=headers, content=content)
    assert response.status_code == 400, response.text
    assert client.get("/api/conversations").json()["conversations"] == []


@pytest.mark.parametrize("storage", ["sqlite", "memory"])
def test_a_conversation_is_found_by_its_files_text(make_client: Any, models: FakeOllama, storage: str) -> None:
    client = make_client(STORAGE_BACKEND=storage)
    cid, _ = turn(
        client,
        {
            "message": "see attached",
            "attachments": [
                attached("cities.csv", "text/csv", CSV),
                attached("report.pdf", "application/pdf", pdf("Quarterly zeppelin sales")),
            ],
        },
    )
    for query in ("nantes", "zeppelin", "cities"):
        hits = client.get(f"/api/search?q={query}").json()["results"]
        assert [(h["conversation"], h["messageIndex"]) for h in hits] == [(cid, 0)], query
