"""Slow and greedy clients against a real server: slowloris heads and bodies, the connection
limit; and the printed address of an IPv6 listener."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import httpx

from tests.support.app import SOPHOS, app_env, process_env
from tests.support.server import LiveServer, free_port


def closed_within(sock: socket.socket, seconds: float, trickle: bytes = b"") -> float | None:
    """Send `trickle` one byte at a time until the server closes the connection; how long
    that took, or None if it is still open after `seconds`."""
    t0 = time.monotonic()
    sock.settimeout(0.3)
    sent = 0
    while time.monotonic() - t0 < seconds:
        try:
            if sent < len(trickle):
                sock.send(trickle[sent : sent + 1])
                sent += 1
            if sock.recv(4096) == b"":
                return time.monotonic() - t0
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return time.monotonic() - t0
    return None


def test_clients_trickling_a_request_head_or_body_are_cut_off(tmp_path: Path) -> None:
    server = LiveServer(app_env(tmp_path, TOOLS_BACKEND="none", REQUEST_TIMEOUT="1.5"), tmp_path).start()
    try:
        with socket.create_connection(("127.0.0.1", server.port)) as idle:
            assert closed_within(idle, 8) is not None  # connected, sent nothing
        with socket.create_connection(("127.0.0.1", server.port)) as slow:
            head = b"GET /api/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 200
            took = closed_within(slow, 10, head)
            assert took is not None and took < 8, took
        with socket.create_connection(("127.0.0.1", server.port)) as slow:
            slow.sendall(
                b"POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b'Content-Length: 100\r\n\r\n{"message": '
            )
            slow.settimeout(15)
            t0 = time.monotonic()
            answer = b""
            while b"REQUEST_TIMEOUT" not in answer and (chunk := slow.recv(4096)):
                answer += chunk
            assert time.monotonic() - t0 < 10  # REQUEST_TIMEOUT is 1.5 s; the machine is loaded
            assert answer.startswith(b"HTTP/1.1 408") and b"REQUEST_TIMEOUT" in answer, answer
        with httpx.Client(base_url=server.url) as client:  # a keep-alive client is unaffected
            for _ in range(3):
                assert client.get("/api/healthz").status_code == 200
    finally:
        server.stop()


def test_connections_beyond_the_limit_are_refused_at_once(tmp_path: Path) -> None:
    server = LiveServer(app_env(tmp_path, TOOLS_BACKEND="none", REQUEST_TIMEOUT="20", MAX_CONNECTIONS="4"), tmp_path).start()
    held: list[socket.socket] = []
    try:
        for _ in range(3):  # each has sent a head and waits for its body; with the next: 4
            s = socket.create_connection(("127.0.0.1", server.port))
            s.sendall(b"POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 50\r\n\r\n")
            s.settimeout(0.5)
            try:
                assert s.recv(100) == b"", "a connection within the limit was refused"
            except TimeoutError:
                pass  # served: it waits for its body
            held.append(s)
        t0 = time.monotonic()
        refused = httpx.get(f"{server.url}/api/healthz", timeout=10)
        assert refused.status_code == 503 and time.monotonic() - t0 < 2
        for s in held:
            s.close()
        time.sleep(0.5)
        assert httpx.get(f"{server.url}/api/healthz", timeout=10).status_code == 200
    finally:
        for s in held:
            s.close()
        server.stop()
    assert "Traceback" not in server.log.read_text()  # clients that left mid-body are no 500s


def test_serve_prints_an_ipv6_address_in_brackets(tmp_path: Path) -> None:
    port = free_port()
    env = process_env(app_env(tmp_path, TOOLS_BACKEND="none", MODEL_BACKEND="demo"))
    proc = subprocess.Popen(
        [SOPHOS, "serve", "--host", "::1", "--port", str(port)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == f"Sophos is listening on http://[::1]:{port}", line
        deadline = time.monotonic() + 20
        while True:
            try:
                assert httpx.get(f"http://[::1]:{port}/api/healthz", timeout=2).status_code == 200
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_hundred_idle_sockets_refuse_no_request_being_served(tmp_path: Path) -> None:
    """With API_TOKEN set, 100 sockets trickling a URL made 94 of 115 authenticated requests
    get 503: idle connections took the slots of MAX_CONNECTIONS."""
    env = app_env(tmp_path, TOOLS_BACKEND="none", REQUEST_TIMEOUT="30", MAX_CONNECTIONS="100", API_TOKEN="t0ken")
    server = LiveServer(env, tmp_path).start()
    idle: list[socket.socket] = []
    try:
        for _ in range(100):
            s = socket.create_connection(("127.0.0.1", server.port))
            s.sendall(b"GET /api/conv")  # and nothing more
            idle.append(s)
        time.sleep(0.5)
        headers = {"Authorization": "Bearer t0ken"}
        with httpx.Client(base_url=server.url, headers=headers, timeout=10) as client:
            codes = [client.get("/api/conversations").status_code for _ in range(30)]
        assert codes == [200] * 30
        # they are bounded all the same: past 64 from one address, the oldest go first
        closed = 0
        for s in idle[:40]:
            s.settimeout(0.01)
            try:
                closed += s.recv(10) == b""
            except (TimeoutError, ConnectionResetError):
                pass
        assert closed >= 36, closed
    finally:
        for s in idle:
            s.close()
        server.stop()


def test_a_huge_request_head_is_431_and_costs_no_more_than_its_limit(tmp_path: Path) -> None:
    server = LiveServer(app_env(tmp_path, TOOLS_BACKEND="none"), tmp_path).start()
    try:
        for head in (
            b"GET /api/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ",  # one header line, endless
            b"GET /api/healthz?",
        ):  # an endless URL
            with socket.create_connection(("127.0.0.1", server.port)) as s:
                s.sendall(head)
                s.settimeout(10)
                answer = b""
                try:
                    for _ in range(80 * 16):  # up to 80 MiB, in 64 KiB pieces
                        s.sendall(b"a" * 65536)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                try:
                    while chunk := s.recv(4096):
                        answer += chunk
                except (TimeoutError, ConnectionResetError):
                    pass
                assert answer.startswith(b"HTTP/1.1 431") and b"HEADERS_TOO_LARGE" in answer, answer[:200]
        # a head complete in one read but too big all the same
        with socket.create_connection(("127.0.0.1", server.port)) as s:
            s.sendall(b"GET /api/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Many: aaaaaaaa\r\n" * 3000 + b"\r\n")
            s.settimeout(10)
            assert s.recv(200).startswith(b"HTTP/1.1 431")
        assert httpx.get(f"{server.url}/api/healthz", headers={"X-Fine": "a" * 8000}, timeout=10).status_code == 200
    finally:
        server.stop()
