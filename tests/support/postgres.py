"""A private PostgreSQL server for tests and benchmarks, and fresh databases on it.

Debian's PostgreSQL is installed but not running, and refuses to run as root: as root the
server runs as the `postgres` user (`runuser`), in a throw-away data directory that user
owns, listening on 127.0.0.1 at a free port with trust authentication. TEST_DATABASE_URL,
when set, names an existing server to use instead (its user must be allowed to CREATE
DATABASE).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

TEMPLATE = "sophos_template"


def _bin_dir() -> Path:
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if not versions:
        raise RuntimeError("PostgreSQL is not installed: apt-get install -y postgresql (or set TEST_DATABASE_URL)")
    return versions[-1].parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


def with_database(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


class PostgresServer:
    """initdb + pg_ctl in a temporary directory; `stop` removes everything."""

    def __init__(self, durable: bool = False) -> None:
        self.bin = _bin_dir()
        self.durable = durable  # fsync on (benchmarks); tests skip it
        self.root = Path(tempfile.mkdtemp(prefix="sophos-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        done = subprocess.run(_as_postgres(list(args)), capture_output=True, text=True, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {done.stdout}{done.stderr}")

    def start(self) -> PostgresServer:
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        if not self.data.exists():
            self._run(
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--locale=C",
            )
        self.pg_ctl("start")
        return self

    def pg_ctl(self, action: str) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c max_connections=300"
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "log"),
            "-w",
            "-t",
            "60",
            "-m",
            "fast",
            action,
        )

    def stop(self) -> None:
        pid_file = self.data / "postmaster.pid"
        if pid_file.exists():
            try:
                self.pg_ctl("stop")
            except RuntimeError:
                os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)


def create_database(url: str, template: str = "template0") -> str:
    """A new, uniquely named database on the server at `url`; its URL."""
    name = f"sophos_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        for attempt in range(50):  # CREATE DATABASE fails while another session uses the template
            try:
                conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
                break
            except psycopg.errors.ObjectInUse:
                time.sleep(0.05 * (attempt + 1))
    return with_database(url, name)


def drop_database(url: str) -> None:
    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def postgres_server(durable: bool = False) -> Iterator[str]:
    """The URL of a server for this session: TEST_DATABASE_URL, or a private one."""
    given = os.environ.get("TEST_DATABASE_URL")
    if given:
        yield given
        return
    server = PostgresServer(durable=durable).start()
    try:
        yield server.url
    finally:
        server.stop()
