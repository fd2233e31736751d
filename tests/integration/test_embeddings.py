"""Semantic search (issue 45, EMBEDDING_MODEL): the embedding adapters against fake Ollama
and OpenAI-compatible servers with deterministic vectors (tests/support/embedding.py), the
hostile server bounded, and `/store/items/search` ranking by meaning on SQLite and
PostgreSQL through the LangGraph API in process."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from adapters.embeddings.http import MAX_BATCH, OllamaEmbeddings, OpenAIEmbeddings, response_limit
from domain.errors import ModelBadResponse, ModelUnreachable
from domain.ranking import cosine
from entrypoints.container import close_container, create_container
from entrypoints.lgapi.app import create_lgapi_app
from tests.support.app import app_env
from tests.support.embedding import concept_vector
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.fake_openai import fake_openai
from tests.support.raw_server import answer, request_head, server


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with fake_ollama() as fake:
        yield fake


async def test_ollama_embeds_in_bounded_batches_unit_vectors_in_order(ollama: FakeOllama) -> None:
    embed = OllamaEmbeddings(ollama.url, "fake-embed", 5)
    texts = [f"my sedan {i}" if i % 2 else f"the puppy {i}" for i in range(MAX_BATCH + 3)]
    got = await embed.embed(texts)
    await embed.aclose()
    assert len(got) == len(texts) and ollama.embedded == texts
    assert all(abs(cosine(v.values, v.values) - 1) < 1e-9 and v.model == "fake-embed" for v in got)
    assert cosine(got[1].values, concept_vector("automobile").values) > 0.9 > cosine(got[0].values, concept_vector("car").values)


async def test_openai_compatible_vectors_are_put_in_their_index_order() -> None:
    with fake_openai() as fake:
        embed = OpenAIEmbeddings(fake.url, "local-model", 5, api_key="k")
        texts = ["a red sedan", "the yacht", "the puppy"]
        got = await embed.embed(texts)  # the fake lists them last first, each with its index
        await embed.aclose()
    assert [g.values for g in got] == [pytest.approx(concept_vector(t).values) for t in texts]


async def test_an_unknown_model_or_no_server_is_a_clear_error(ollama: FakeOllama) -> None:
    embed = OllamaEmbeddings(ollama.url, "nomic-embed-text", 5)
    with pytest.raises(ModelBadResponse, match=r"'nomic-embed-text' at .* answered 404: .*not found"):
        await embed.embed(["x"])
    await embed.aclose()
    gone = OllamaEmbeddings("http://127.0.0.1:9", "fake-embed", 5)
    with pytest.raises(ModelUnreachable, match="could not be reached"):
        await gone.embed(["x"])
    await gone.aclose()


def body_of(payload: object) -> bytes:
    return answer(json.dumps(payload).encode())


HOSTILE = [
    (body_of({"embeddings": [[0.1, 0.2], [0.3]]}), "2 vectors for 1 texts|unknown shape|vectors for"),
    (body_of({"embeddings": [[0.1, 0.2]] * 2}), "2 vectors for 1 texts"),
    (answer(b'{"embeddings": [[NaN, 1.0]]}'), "not a finite number"),
    (body_of({"embeddings": [["a", 1.0]]}), "not a finite number"),
    (body_of({"embeddings": [[]]}), "not a list of 1 to"),
    (body_of({"embeddings": [[1.0] * 20_000]}), "not a list of 1 to"),
    (body_of({"data": []}), "unknown shape"),
    (answer(b"<html>busy</html>"), "not JSON"),
    (answer(b"[" * 100_000), "not JSON"),
]


@pytest.mark.parametrize(("wire", "said"), HOSTILE)
async def test_a_hostile_answer_is_refused_with_a_clear_error(wire: bytes, said: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await request_head(reader)
        writer.write(wire)
        await writer.drain()

    async with server(handler) as srv:
        embed = OllamaEmbeddings(srv.url, "fake-embed", 5)
        with pytest.raises(ModelBadResponse, match=said):
            await embed.embed(["one text"])
        await embed.aclose()


async def test_an_endless_answer_is_cut_at_its_bound_and_a_drip_at_the_deadline() -> None:
    sent = [0]

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await request_head(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"1.0," * 16_384
        while sent[0] < 100 * response_limit(1):
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent[0] += len(chunk)
            await writer.drain()

    async with server(endless) as srv:
        embed = OllamaEmbeddings(srv.url, "fake-embed", 30)
        with pytest.raises(ModelBadResponse, match="sent more than"):
            await embed.embed(["x"])
        assert sent[0] < 100 * response_limit(1)  # refused while the server was still sending
        await embed.aclose()

    async def drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await request_head(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        while True:  # a byte every 0.2 s: never idle long enough for a read timeout
            writer.write(b"1\r\n \r\n")
            await writer.drain()
            await asyncio.sleep(0.2)

    async with server(drip) as srv:
        embed = OllamaEmbeddings(srv.url, "fake-embed", 1)
        started = time.monotonic()
        with pytest.raises(ModelUnreachable, match="did not answer within 1 s"):
            await embed.embed(["x"])
        assert time.monotonic() - started < 3
        await embed.aclose()


async def test_a_change_of_width_mid_way_is_refused() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while True:
            await request_head(reader)
            writer.write(body_of({"embeddings": [[1.0] * (4 if n == 1 else 5)]}))
            await writer.drain()

    async with server(handler) as srv:
        embed = OllamaEmbeddings(srv.url, "fake-embed", 5)
        embed._client.headers["Connection"] = "close"  # each call a connection of its own: its n
        assert (await embed.embed(["x"]))[0].dimensions == 4
        with pytest.raises(ModelBadResponse, match="5 dimensions after ones of 4"):
            await embed.embed(["y"])
        await embed.aclose()


def lgapi(tmp_path: Path, **env: str) -> Iterator[TestClient]:
    settings = app_env(tmp_path, MODEL_BACKEND="ollama", TOOLS_BACKEND="none", EMBEDDING_MODEL="fake-embed", **env)
    container = create_container(settings)
    app = create_lgapi_app(container.services(), container.settings(), asyncio.Event())
    with TestClient(app) as c:
        yield c
        c.portal.call(close_container, container)  # type: ignore[union-attr]


def search_by_meaning(client: TestClient, ollama: FakeOllama) -> None:
    for key, text in [("car", "My red sedan is parked outside"), ("boat", "The yacht leaves at dawn"), ("dog", "Walk the puppy")]:
        assert client.put("/store/items", json={"namespace": ["mem"], "key": key, "value": {"text": text}}).status_code == 204
    client.put("/store/items", json={"namespace": ["mem"], "key": "off", "value": {"text": "sedan"}, "index": False})
    found = client.post("/store/items/search", json={"namespace_prefix": ["mem"], "query": "automobile"}).json()["items"]
    assert [i["key"] for i in found][0] == "car" and "off" not in [i["key"] for i in found]
    assert "sedan" not in ollama.embedded  # an item put with index false is not embedded

    ollama.embedders = ()  # the embedding model gone: a put says so and writes nothing
    refused = client.put("/store/items", json={"namespace": ["mem"], "key": "new", "value": {"text": "x"}})
    assert refused.status_code == 502 and "fake-embed" in refused.text
    assert client.get("/store/items", params={"namespace": "mem", "key": "new"}).json() is None


def test_store_search_ranks_by_meaning_on_sqlite(tmp_path: Path, ollama: FakeOllama) -> None:
    for client in lgapi(tmp_path, OLLAMA_HOST=ollama.url):
        search_by_meaning(client, ollama)


def test_store_search_ranks_by_meaning_on_postgres(tmp_path: Path, ollama: FakeOllama, pg_url: str) -> None:
    for client in lgapi(tmp_path, OLLAMA_HOST=ollama.url, DATABASE_URL=pg_url):
        search_by_meaning(client, ollama)
