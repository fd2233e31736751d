"""The kill -9 torture of scheduled runs (issue 46): two `sophos serve` processes share one
database (a SQLite file, or PostgreSQL with `--backend postgres`); a schedule fires every
second, each firing in a new conversation whose message makes the fake model call the
ledger tool once; one process at a time is SIGKILLed at random and started again. At the
end, every second of the window has exactly one firing (by its scheduled time), each
firing's conversation holds its message once and its run completed, and the ledger holds
exactly one tool call (one idempotency key) per firing. The schedule names a webhook at a
local receiver that fails each delivery's first call (so every one is retried, across the
kills): every delivery the outbox holds arrived at least once with a good signature and was
processed once, every run of a firing made one (its outcome; an interrupted run's resume
carries it on), and none is left undelivered.

    python -m tests.support.schedule_torture --seconds 300 --kills 200 [--backend postgres] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.support.app import app_env, config_dir, ledger_server_entry
from tests.support.fake_ollama import FakeOllama
from tests.support.postgres import create_database, postgres_server
from tests.support.server import LiveServer
from tests.support.webhook_receiver import Receiver

PROCESSES = 2


@dataclass
class Report:
    kills: int = 0
    firings: int = 0
    missing: list[str] = field(default_factory=list)  # seconds of the window with no firing
    outside: int = 0  # firings before the window (fine) are not counted; after the pause: a bug
    not_completed: list[str] = field(default_factory=list)  # firings whose run did not complete
    message_counts: list[str] = field(default_factory=list)  # conversations without exactly one message
    ledger: list[str] = field(default_factory=list)  # conversations without exactly one tool call key
    unclaimed_runs: int = 0  # scheduled runs in a conversation no firing names: a firing started twice
    reexecutions_in_flight: int = 0  # a call in flight at a kill run again with its key (at least once)
    deliveries: int = 0  # webhook deliveries in the outbox
    undelivered: list[str] = field(default_factory=list)  # deliveries not delivered, or not arrived at the receiver
    runs_without_delivery: list[str] = field(default_factory=list)  # finished runs of a firing with no delivery
    firings_without_outcome: list[str] = field(default_factory=list)  # firings whose completion was never told
    twice_processed: int = 0  # a run told under two delivery ids (the receiver would process it twice)
    bad_signatures: int = 0
    redeliveries: int = 0  # calls beyond the first per delivery id (the receiver's 500s, kills): at least once

    def ok(self) -> bool:
        return not (
            self.missing
            or self.outside
            or self.not_completed
            or self.message_counts
            or self.ledger
            or self.unclaimed_runs
            or self.undelivered
            or self.runs_without_delivery
            or self.firings_without_outcome
            or self.twice_processed
            or self.bad_signatures
        )

    def table(self) -> str:
        return "\n".join(f"{k:<24} {v if isinstance(v, int) else len(v)}" for k, v in self.__dict__.items())


def responder(body: dict[str, Any]) -> dict[str, Any]:
    """A scheduled message's answer: one ledger call, then a short text."""
    last = (body.get("messages") or [{}])[-1]
    if last.get("role") == "user":
        return {"tool_calls": [("ledger__append", {"label": "tick", "delay": 0})], "text": "Noting.", "token_delay": 0.01}
    return {"text": "Noted.", "token_delay": 0.01}


class ScheduleTorture:
    def __init__(self, workdir: Path, seed: int, database_url: str = "") -> None:
        self.dir = workdir
        self.url = database_url
        self.rng = random.Random(seed)
        self.book = workdir / "ledger.jsonl"
        config_dir(workdir, {"ledger": ledger_server_entry(self.book)})
        self.ollama = FakeOllama().start()
        self.ollama.responder = responder
        self.receiver = Receiver().__enter__()
        self.env = app_env(
            workdir,
            self.ollama.url,
            RUN_LEASE_SECONDS="3",
            SHUTDOWN_TIMEOUT="2",
            AUTO_RESUME="true",
            DATABASE_URL=self.url,
            WEBHOOK_ALLOWED_HOSTS="127.0.0.1",
            WEBHOOK_RETRY_SECONDS="0.5",
            WEBHOOK_TIMEOUT_SECONDS="2",
        )
        self.servers: list[LiveServer] = []
        self.report = Report()

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.url:
            import psycopg

            with psycopg.connect(self.url) as conn:
                return conn.execute(sql.replace("?", "%s"), args).fetchall()
        db = sqlite3.connect(self.env["DATABASE_PATH"], timeout=30)
        try:
            return db.execute(sql, args).fetchall()
        finally:
            db.close()

    def alive(self) -> LiveServer:
        return next(s for s in self.servers if s.proc is not None and s.proc.poll() is None)

    def run(self, seconds: float, kills: int) -> Report:
        self.servers = [LiveServer(self.env, self.dir).start(timeout=120) for _ in range(PROCESSES)]
        self.receiver.secret = self.alive().get("/api/webhooks/secret").json()["secret"]
        hook = self.receiver.url("/fail-once")
        made = self.alive().post("/api/schedules", {"cron": "* * * * * *", "message": "tick", "webhook": hook}).json()["schedule"]
        start = datetime.fromisoformat(made["createdAt"])
        deadline = time.monotonic() + seconds
        pause = max(seconds / max(kills, 1), 0.5)
        # the window lasts `seconds`, and on a loaded machine (slow restarts) on until at least
        # two kills were made, whatever the random moments
        while (time.monotonic() < deadline or self.report.kills < min(kills, 2)) and self.report.kills < kills:
            time.sleep(self.rng.uniform(0.2, 2 * pause))  # the moment of the kill: random
            victim = self.rng.choice(self.servers)
            victim.kill()
            self.report.kills += 1
            victim.start(timeout=120)
        paused = self.alive().patch(f"/api/schedules/{made['id']}", {"enabled": False}).json()["schedule"]
        paused_at = datetime.now(UTC)  # acknowledged: no firing is claimed for a later second
        self.settle(made["id"])
        self.check(made["id"], start, paused, paused_at)
        return self.report

    def settle(self, schedule_id: str, timeout: float = 60.0) -> None:
        """Wait until no run is running and no firing waits to start again."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            running = self.query("SELECT count(*) FROM runs WHERE status IN ('running', 'interrupted')")[0][0]
            redo = self.query("SELECT count(*) FROM schedule_firings WHERE state = 'redo'")[0][0]
            pending = self.query("SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'")[0][0]
            if not running and not redo and not pending:
                return
            time.sleep(0.2)

    def check(self, schedule_id: str, start: datetime, paused: dict[str, Any], paused_at: datetime) -> None:
        rows = self.query(
            "SELECT scheduled_for, run_id, conversation_id FROM schedule_firings WHERE schedule_id = ?", (schedule_id,)
        )
        fired = {_when(r[0]): (r[1], r[2]) for r in rows}
        self.report.firings = len(fired)
        last = _when(paused["lastFiredFor"]) if paused["lastFiredFor"] else start
        second = start.replace(microsecond=0) + timedelta(seconds=1)
        while second <= last:
            if second not in fired:
                self.report.missing.append(second.isoformat())
            second += timedelta(seconds=1)
        # a tick on another process may claim the second the pause met (in flight, not missing
        # either way); a firing for a second after the pause was acknowledged is a bug
        self.report.outside = sum(at > paused_at for at in fired)
        starts = self.ledger_keys()
        scheduled = {r[0] for r in self.query("SELECT DISTINCT conversation_id FROM runs WHERE \"trigger\" = 'schedule'")}
        self.report.unclaimed_runs = len(scheduled - {cid for _, cid in fired.values()})
        for at, (_, cid) in sorted(fired.items()):
            status = self.query("SELECT status FROM runs WHERE conversation_id = ? ORDER BY started_at DESC LIMIT 1", (cid,))
            if not status or status[0][0] != "completed":
                self.report.not_completed.append(f"{at.isoformat()} {cid} {status}")
            detail = self.alive().get(f"/api/conversations/{cid}").json()
            said = [m for m in detail.get("messages", []) if m["role"] == "user" and m["content"] == "tick"]
            if len(said) != 1:
                self.report.message_counts.append(f"{at.isoformat()} {cid}: {len(said)}")
            keys = [k for k in starts if k.startswith(cid + ":")]
            if len(keys) != 1:
                self.report.ledger.append(f"{at.isoformat()} {cid}: {len(keys)} keys")
            self.report.reexecutions_in_flight += sum(starts[k] - 1 for k in keys)
        self.check_deliveries({cid for _, cid in fired.values()})

    def check_deliveries(self, conversations: set[str]) -> None:
        """Every delivery arrived (at least once) and was processed once; every finished run
        of a firing made one; every firing's completion was told."""
        rows = self.query("SELECT id, run_id, state, body FROM webhook_deliveries")
        self.report.deliveries = len(rows)
        with self.receiver.lock:
            arrivals, processed = dict(self.receiver.arrivals), dict(self.receiver.processed)
            self.report.bad_signatures = self.receiver.bad_signatures
        for did, run_id, state, _ in rows:
            if state != "delivered" or did not in arrivals or did not in processed:
                self.report.undelivered.append(f"{did} run {run_id}: {state}, arrived {arrivals.get(did, 0)}")
        self.report.redeliveries = sum(n - 1 for n in arrivals.values())
        told = Counter(body["runId"] for body in processed.values())
        self.report.twice_processed = sum(n > 1 for n in told.values())
        delivered_runs = {r[1] for r in rows}
        finished = self.query("SELECT id, conversation_id, status FROM runs WHERE status <> 'running'")
        for run_id, cid, status in finished:
            if cid in conversations and run_id not in delivered_runs:
                self.report.runs_without_delivery.append(f"{run_id} {cid} {status}")
        completed = {body["conversationId"] for body in processed.values() if body["status"] == "completed"}
        self.report.firings_without_outcome = sorted(conversations - completed)

    def ledger_keys(self) -> Counter[str]:
        if not self.book.exists():
            return Counter()
        entries = [json.loads(x) for x in self.book.read_text().splitlines() if x.strip()]
        return Counter(e["key"] for e in entries if e["event"] == "start")

    def close(self) -> None:
        for server in self.servers:
            server.stop()
        self.ollama.stop()
        self.receiver.__exit__()


def _when(value: Any) -> datetime:
    return value.astimezone(UTC) if isinstance(value, datetime) else datetime.fromisoformat(value).astimezone(UTC)


@contextmanager
def torture(workdir: Path, seed: int, backend: str = "sqlite") -> Iterator[ScheduleTorture]:
    if backend == "postgres":
        with postgres_server() as server_url:
            t = ScheduleTorture(workdir, seed, create_database(server_url))
            try:
                yield t
            finally:
                t.close()
        return
    t = ScheduleTorture(workdir, seed)
    try:
        yield t
    finally:
        t.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="sophos-schedule-torture-"))
    with torture(workdir, args.seed, args.backend) as t:
        report = t.run(args.seconds, args.kills)
    print(report.table())
    for name in ("missing", "not_completed", "message_counts", "ledger", "undelivered", "runs_without_delivery"):
        for line in getattr(report, name)[:20]:
            print(f"{name}: {line}")
    return 0 if report.ok() else 1


if __name__ == "__main__":
    raise SystemExit(main())
