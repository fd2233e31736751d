"""WebhookSender over httpx and AddressResolver over the system resolver. A call connects to
the address the service checked (the URL's host kept in the Host header and, for https, in
the TLS server name the certificate is checked against), follows no redirect, reads at most
MAX_RESPONSE bytes of the answer and takes at most `timeout` seconds in all."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

import httpx

from domain.webhooks import IpAddress, WebhookTarget
from ports.webhooks import AddressResolver, WebhookSender

MAX_RESPONSE = 64 * 1024  # bytes of a receiver's answer read; the rest is never downloaded
MAX_ADDRESSES = 32  # addresses of one name checked: a longer answer is refused whole


class SystemResolver(AddressResolver):
    def __init__(self, timeout: float = 5.0) -> None:
        self.timeout = timeout

    async def resolve(self, host: str, port: int) -> Sequence[IpAddress]:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.timeout):
                infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, TimeoutError, UnicodeError):
            return []
        found = list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos))
        return found if len(found) <= MAX_ADDRESSES else []


def pinned_url(target: WebhookTarget, address: IpAddress) -> str:
    """The target's URL with its host replaced by `address` (the port and path kept)."""
    parts = urlsplit(target.url)
    host = f"[{address}]" if address.version == 6 else str(address)
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))


class HttpxWebhookSender(WebhookSender):
    def __init__(self, timeout: float = 10.0) -> None:
        self.timeout = timeout

    async def send(self, target: WebhookTarget, address: IpAddress, body: bytes, headers: dict[str, str]) -> str | None:
        parts = urlsplit(target.url)
        sent = {**headers, "Host": parts.netloc.rpartition("@")[2]}
        extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
        try:
            async with (
                asyncio.timeout(self.timeout),
                httpx.AsyncClient(timeout=self.timeout, follow_redirects=False, trust_env=False) as client,
                client.stream("POST", pinned_url(target, address), content=body, headers=sent, extensions=extensions) as answer,
            ):
                await _read_some(answer)
        except TimeoutError:
            return f"no answer within {self.timeout:g} s"
        except httpx.TimeoutException:
            return f"no answer within {self.timeout:g} s"
        except httpx.HTTPError as e:
            return f"{type(e).__name__}: {str(e)[:200]}"
        if answer.is_redirect:
            return f"HTTP {answer.status_code}: a redirect, not followed"
        if not answer.is_success:
            return f"HTTP {answer.status_code}"
        return None


async def _read_some(answer: httpx.Response) -> int:
    """Read at most MAX_RESPONSE bytes of the answer (a receiver may keep the connection
    busy, never this process's memory)."""
    read = 0
    async for chunk in answer.aiter_raw():
        read += len(chunk)
        if read >= MAX_RESPONSE:
            break
    return read
