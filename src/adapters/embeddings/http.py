"""EmbeddingPort over HTTP: Ollama's `/api/embed` and the OpenAI-compatible `/v1/embeddings`
(llama.cpp's `--embeddings`, vLLM, LM Studio, OpenAI), on the server the chat model uses.

Every call is bounded, as a model call is (adapters/langchain/bounds.py): a deadline over the
whole exchange (a server that drips bytes cannot hold it), the response read up to a size
that the batch's count and the widest width allow, then checked: one vector per text, all of
one width, that width the same as before, every value a finite number."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from typing import Any

import httpx

from domain.errors import ModelBadResponse, ModelUnreachable
from domain.ranking import MAX_DIMENSIONS, Vector, unit
from ports.embeddings import EmbeddingPort

MAX_BATCH = 32  # texts a request
MAX_TEXT = 8_000  # characters of a text (about 2,000 tokens: a chunk, a memory, a query)
BYTES_PER_VALUE = 32  # a float as JSON text, with its comma and some room ("-0.012345678901234567,")


def response_limit(count: int) -> int:
    """The most bytes a response to `count` texts may take: `count` of the widest vectors."""
    return 64 * 1024 + count * MAX_DIMENSIONS * BYTES_PER_VALUE


class HttpEmbeddings(EmbeddingPort):
    """The shared part; a subclass says where a request goes and where the vectors are."""

    path = ""

    def __init__(self, base_url: str, model: str, timeout: float, api_key: str = "") -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.width: int | None = None  # learned from the first answer, then held
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(timeout), headers=headers)

    def body(self, texts: Sequence[str]) -> dict[str, Any]:
        raise NotImplementedError

    def vectors(self, answer: Any) -> list[Any]:
        raise NotImplementedError

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        out: list[Vector] = []
        for start in range(0, len(texts), MAX_BATCH):
            batch = [t[:MAX_TEXT] for t in texts[start : start + MAX_BATCH]]
            out.extend(self._checked(await self._post(batch), len(batch)))
        return out

    async def aclose(self) -> None:
        await self._client.aclose()

    def _where(self) -> str:
        return f"the embedding model {self.model!r} at {self.base_url}"

    async def _post(self, batch: list[str]) -> Any:
        url = self.base_url + self.path
        try:
            async with asyncio.timeout(self.timeout):
                async with self._client.stream("POST", url, json=self.body(batch)) as response:
                    raw = await self._read(response, response_limit(len(batch)))
        except (TimeoutError, httpx.TimeoutException) as e:
            raise ModelUnreachable(f"{self._where()} did not answer within {self.timeout:g} s") from e
        except httpx.HTTPError as e:
            raise ModelUnreachable(f"{self._where()} could not be reached: {e}") from e
        try:
            return json.loads(raw)
        except (ValueError, RecursionError) as e:
            raise ModelBadResponse(f"{self._where()} answered with what is not JSON") from e

    async def _read(self, response: httpx.Response, limit: int) -> bytes:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise ModelBadResponse(f"{self._where()} sent more than {limit} bytes; refused")
            chunks.append(chunk)
        raw = b"".join(chunks)
        if response.status_code >= 400:
            excerpt = raw[:200].decode("utf-8", "replace")
            raise ModelBadResponse(f"{self._where()} answered {response.status_code}: {excerpt}")
        return raw

    def _checked(self, answer: Any, count: int) -> list[Vector]:
        try:
            rows = self.vectors(answer)
        except (KeyError, TypeError, IndexError, AttributeError, ValueError) as e:
            raise ModelBadResponse(f"{self._where()} answered in an unknown shape") from e
        if not isinstance(rows, list) or len(rows) != count:
            raise ModelBadResponse(
                f"{self._where()} sent {len(rows) if isinstance(rows, list) else 'no'} vectors for {count} texts"
            )
        out = []
        for row in rows:
            if not isinstance(row, list) or not 0 < len(row) <= MAX_DIMENSIONS:
                raise ModelBadResponse(f"{self._where()} sent a vector that is not a list of 1 to {MAX_DIMENSIONS} numbers")
            if self.width is not None and len(row) != self.width:
                raise ModelBadResponse(f"{self._where()} sent a vector of {len(row)} dimensions after ones of {self.width}")
            if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in row):
                raise ModelBadResponse(f"{self._where()} sent a vector with a value that is not a finite number")
            self.width = len(row)
            out.append(Vector(self.model, unit(row)))
        return out


class OllamaEmbeddings(HttpEmbeddings):
    """Ollama's `POST /api/embed` (texts past the model's context are truncated by Ollama)."""

    path = "/api/embed"

    def body(self, texts: Sequence[str]) -> dict[str, Any]:
        return {"model": self.model, "input": list(texts), "truncate": True}

    def vectors(self, answer: Any) -> list[Any]:
        rows: list[Any] = answer["embeddings"]
        return rows


class OpenAIEmbeddings(HttpEmbeddings):
    """`POST {OPENAI_BASE_URL}/embeddings`: `data[i].embedding`, put in order by `index`."""

    path = "/embeddings"

    def body(self, texts: Sequence[str]) -> dict[str, Any]:
        return {"model": self.model, "input": list(texts), "encoding_format": "float"}

    def vectors(self, answer: Any) -> list[Any]:
        data = answer["data"]
        if not isinstance(data, list):
            raise TypeError("data")
        order = sorted(range(len(data)), key=lambda i: int(data[i].get("index", i)))
        return [data[i]["embedding"] for i in order]
