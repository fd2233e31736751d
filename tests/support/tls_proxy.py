"""A TLS-terminating reverse proxy on 127.0.0.1, as nginx or Caddy in front of Sophos: https
in, plain http to the upstream, with the client's address appended to `X-Forwarded-For`,
`X-Forwarded-Proto: https`, and (forward auth) a user header set over whatever the client
sent. One request per connection (`Connection: close` both ways); the answer is relayed as
it arrives, so event streams work. Its certificate is self-signed for 127.0.0.1 and
localhost (made with `cryptography`); clients verify against `TlsProxy.ca`. It runs on an
event loop in a thread of its own, so synchronous tests can use it."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.forward_proxy import HOP_BY_HOP, pipe

REPLACED = {b"x-forwarded-proto", b"host"}


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost and its key, as PEM files in `directory`."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "proxy.crt", directory / "proxy.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


@dataclass
class TlsProxy:
    upstream_port: int
    ca: Path
    user_header: str = ""
    user: str = ""  # set on every request when `user_header` is (else the client's goes through)
    url: str = ""
    forwarded: list[dict[str, str]] = field(default_factory=list)  # the headers it added, per request

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            line, *fields = head[:-4].split(b"\r\n")
            peer = writer.get_extra_info("peername")[0]
            await self._forward(line, fields, peer, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, ssl.SSLError):
            pass
        finally:
            writer.close()

    def _headers(self, fields: list[bytes], peer: str) -> list[bytes]:
        user = self.user_header.lower().encode()
        kept, forwarded_for, host = [], "", ""
        for f in fields:
            name, _, value = f.partition(b":")
            key = name.strip().lower()
            if key == b"x-forwarded-for":
                forwarded_for = f"{forwarded_for}, {value.strip().decode()}" if forwarded_for else value.strip().decode()
            elif key == b"host":
                host = value.strip().decode()
            elif key not in HOP_BY_HOP and key not in REPLACED and not (user and key == user):
                kept.append(f)
        added = {
            "Host": host,
            "X-Forwarded-For": f"{forwarded_for}, {peer}" if forwarded_for else peer,
            "X-Forwarded-Proto": "https",
        }
        if user:
            added[self.user_header] = self.user
        self.forwarded.append(added)
        return kept + [f"{k}: {v}".encode() for k, v in added.items()]

    async def _forward(
        self, line: bytes, fields: list[bytes], peer: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        kept = self._headers(fields, peer)
        length = next((int(f.split(b":", 1)[1]) for f in kept if f.lower().startswith(b"content-length:")), 0)
        body = await reader.readexactly(length)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        try:
            up_writer.write(b"\r\n".join([line, *kept, b"Connection: close", b"", body]))
            await up_writer.drain()
            status, *answer = (await up_reader.readuntil(b"\r\n\r\n"))[:-4].split(b"\r\n")
            answer = [f for f in answer if f.split(b":", 1)[0].strip().lower() not in HOP_BY_HOP]
            writer.write(b"\r\n".join([status, *answer, b"Connection: close", b"", b""]))
            await pipe(up_reader, writer)
        finally:
            up_writer.close()


@contextlib.contextmanager
def tls_proxy(upstream_port: int, directory: Path, user_header: str = "", user: str = "") -> Iterator[TlsProxy]:
    """The proxy, listening on a free port of 127.0.0.1 until the block ends."""
    cert, key = self_signed(directory)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    proxy = TlsProxy(upstream_port, cert, user_header, user)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stop: asyncio.Event | None = None

    async def serve() -> None:
        nonlocal stop
        stop = asyncio.Event()
        server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0, ssl=context)
        proxy.url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        ready.set()
        async with server:
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield proxy
    finally:
        assert stop is not None
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()
