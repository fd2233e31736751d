"""The HTTP transport under the model clients: aiohttp, behind httpx's interface.

ChatOllama (through the ollama client) and ChatOpenAI (through the openai client) speak httpx.
httpx's own transport (httpcore, h11) parses each streamed response line by line in pure
Python: on the fake model answering at once, a streamed call cost 2.5 ms of CPU through it
and 0.9-1.0 ms through aiohttp's C parser (`bench/model_transport.py`). `httpx-aiohttp`, by
httpx's maintainer, plugs aiohttp in as an httpx transport: the clients, their requests,
status errors and response objects are unchanged. aiohttp keeps one connection pool per
transport and takes an idle connection without walking the pool, as httpcore did.
"""

from __future__ import annotations

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport

CONNECTIONS = 128  # to the model server: as many as runs may call at once, all kept alive


def model_transport(connections: int = CONNECTIONS) -> AiohttpTransport:
    """One pool for every call of one model: its session opens on the first request, in the
    serving loop, and closes with `aclose()`."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return AiohttpTransport(limits=limits)


def not_a_timeout(error: BaseException) -> bool:
    """Whether a "timeout" is really another connection error. httpx-aiohttp maps every aiohttp
    connection error to `httpx.ConnectTimeout`, a refused connection included (and the model
    clients wrap that once more): the aiohttp error at the root of the chain decides."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, aiohttp.ClientError):
            return not isinstance(cause, TimeoutError)
        cause = cause.__cause__
    return False
