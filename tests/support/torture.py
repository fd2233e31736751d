"""The kill -9 torture harness: a real `sophos serve` subprocess, a fake Ollama scripting
tool calls, and a ledger MCP server that appends every execution with its idempotency key.
It sends turns, SIGKILLs the server at random moments, restarts it, resumes what is
resumable, and checks the invariants after every restart and at the end.

With `--backend postgres`, three servers share one PostgreSQL database (a private server
is started, or TEST_DATABASE_URL's is used): turns go to any of them, and each trial kills
a random one and starts it again while the other two go on.

With `--queue`, a turn for a conversation that is busy is queued (`multitask: "enqueue"`)
instead of refused: every queued message must be answered exactly once, in order, and
every queue drained by the end.

With `--traces`, the servers export OTLP traces to a receiver in this process; at the end
every model request and tool execution must have its span there (tests/support/torture_traces.py).

    python -m tests.support.torture --kills 1000 [--seed 7] [--dir DIR] [--backend postgres] [--queue] [--traces]
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
from pathlib import Path
from typing import Any

import httpx

from tests.support.app import app_env, config_dir, ledger_server_entry
from tests.support.fake_ollama import FakeOllama
from tests.support.otlp_receiver import OtlpReceiver
from tests.support.postgres import create_database, postgres_server
from tests.support.server import LiveServer
from tests.support.torture_traces import trace_violations, wait_shipped

PROCESSES = {"sqlite": 1, "postgres": 3}


@dataclass
class Tallies:
    kills: int = 0
    trials: int = 0
    acknowledged: int = 0
    lost_messages: int = 0
    queued: int = 0  # acknowledged as queued behind a running turn (--queue)
    started_twice: int = 0  # an acknowledged message in the thread more than once
    out_of_order: int = 0  # queued messages of a conversation answered out of their order
    undrained: int = 0  # queued messages left at the end
    duplicate_executions: int = 0  # a call with a saved result that ran again
    reexecutions_in_flight: int = 0  # a call in flight at a kill that ran again, same key
    executions_of_unrecorded_calls: int = 0  # a key no saved assistant message holds
    stuck_runs: int = 0
    unanswered_tool_calls: int = 0
    not_completed: int = 0
    integrity_failures: int = 0
    spans: int = 0  # distinct spans received (--traces)
    span_resends: int = 0  # spans received again after a lost acknowledgement
    spans_interrupted: int = 0  # calls and runs a kill cut, shipped as interrupted
    trace_violations: int = 0
    violations: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return not (
            self.lost_messages
            or self.duplicate_executions
            or self.stuck_runs
            or self.unanswered_tool_calls
            or self.not_completed
            or self.integrity_failures
            or self.executions_of_unrecorded_calls
            or self.started_twice
            or self.out_of_order
            or self.undrained
            or self.trace_violations
        )

    def table(self) -> str:
        rows = [(k, v) for k, v in self.__dict__.items() if k != "violations"]
        return "\n".join(f"{k:<30} {v}" for k, v in rows)


def responder(body: dict[str, Any]) -> dict[str, Any]:
    """First answer to a user turn: 1-3 tool calls; after tool results: streamed text."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "user":
        rng = random.Random(last.get("content"))
        n = rng.randint(1, 3)
        calls = [
            ("ledger__append", {"label": f"{last['content']}#{i}", "delay": rng.choice([0, 0.05, 0.3, 0.8])}) for i in range(n)
        ]
        return {"tool_calls": calls, "text": "Let me note that.", "token_delay": 0.02}
    return {"text": "All noted, " + "thank you " * 10, "token_delay": 0.02}


class Torture:
    def __init__(self, workdir: Path, seed: int, database_url: str = "", queue: bool = False, traces: bool = False) -> None:
        self.queue = queue
        self.receiver = OtlpReceiver().start() if traces else None
        self.dir = workdir
        self.url = database_url  # PostgreSQL, shared by PROCESSES["postgres"] servers
        self.rng = random.Random(seed)
        self.book = workdir / "ledger.jsonl"
        config_dir(workdir, {"ledger": ledger_server_entry(self.book)})
        self.ollama = FakeOllama().start()
        self.ollama.responder = responder
        self.env = app_env(workdir, self.ollama.url, RUN_LEASE_SECONDS="5", SHUTDOWN_TIMEOUT="2", DATABASE_URL=self.url)
        if self.receiver is not None:
            self.env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": self.receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200"}
        self.db = Path(self.env["DATABASE_PATH"])
        self.servers: list[LiveServer] = []
        self.acked: dict[str, list[str]] = {}  # conversation -> acknowledged messages
        self.twice: set[tuple[str, str]] = set()  # (conversation, message) found twice
        self.saved: dict[str, int] = {}  # key with a saved result -> ledger starts when first seen
        self.turn = 0
        self.t = Tallies()

    # --- observations -------------------------------------------------------------------

    def ledger_starts(self) -> Counter[str]:
        if not self.book.exists():
            return Counter()
        entries = [json.loads(x) for x in self.book.read_text().splitlines() if x.strip()]
        return Counter(e["key"] for e in entries if e["event"] == "start")

    def orphans(self) -> int:
        """Runs left `running` by a process that is gone (one that runs may own runs)."""
        live = {s.proc.pid for s in self.servers if s.proc is not None and s.proc.poll() is None}
        if self.url:
            import psycopg

            with psycopg.connect(self.url) as conn:
                owners = [r[0] for r in conn.execute("SELECT owner_pid FROM runs WHERE status = 'running'")]
            return len([pid for pid in owners if pid not in live])
        db = sqlite3.connect(self.db)
        try:
            if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                self.t.integrity_failures += 1
            owners = [r[0] for r in db.execute("SELECT owner_pid FROM runs WHERE status = 'running'")]
        finally:
            db.close()
        return len([pid for pid in owners if pid not in live])

    def check(self, server: LiveServer, final: bool = False) -> None:
        stuck = self.orphans()
        if stuck and not final:
            self.t.stuck_runs += stuck
            self.t.violations.append(f"{stuck} run(s) left running after restart")
        starts = self.ledger_starts()
        saved_now: set[str] = set()
        for cid, messages in self.acked.items():
            detail = self.read(server, cid, messages)
            users = [m["content"] for m in detail["messages"] if m["role"] == "user"]
            waiting = [q["text"] for q in detail.get("queued", [])]
            for m in messages:
                if m not in users and m not in waiting:
                    self.t.lost_messages += 1
                    self.t.violations.append(f"lost acknowledged message {m!r} of {cid}")
                if users.count(m) + waiting.count(m) > 1 and (cid, m) not in self.twice:
                    self.twice.add((cid, m))
                    self.t.started_twice += 1
                    self.t.violations.append(f"acknowledged message {m!r} of {cid} is there twice")
            answered = [m for m in users if m in messages]
            if answered != sorted(answered, key=messages.index):
                self.t.out_of_order += 1
                self.t.violations.append(f"messages of {cid} answered out of order: {answered}")
            if final and waiting:
                self.t.undrained += len(waiting)
                self.t.violations.append(f"{len(waiting)} queued message(s) of {cid} never started")
            results = [m for m in detail["messages"] if m["role"] == "tool"]
            per_call = Counter(m["toolCallId"] for m in results)
            if any(n > 1 for n in per_call.values()):
                self.t.violations.append(f"a tool call with two results in {cid}")
                self.t.unanswered_tool_calls += 1
            saved_now.update(f"{cid}:{m['toolCallId']}" for m in results if m["status"] == "success")
            if final:
                recorded = {
                    f"{cid}:{c['id']}" for m in detail["messages"] if m["role"] == "assistant" for c in m.get("toolCalls", [])
                }
                for key in starts:
                    if key.startswith(cid + ":") and key not in recorded:
                        self.t.executions_of_unrecorded_calls += 1
                        self.t.violations.append(f"{key} ran but no saved message holds that call")
                if detail["conversation"]["status"] != "completed" or detail["resumable"]:
                    self.t.not_completed += 1
                    self.t.violations.append(f"{cid} ended {detail['conversation']['status']}")
                called = [c["id"] for m in detail["messages"] if m["role"] == "assistant" for c in m.get("toolCalls", [])]
                missing = [c for c in called if per_call.get(c) != 1]
                self.t.unanswered_tool_calls += len(missing)
        # the baseline of a result seen saved: the ledger read after the thread (read before it,
        # a call that started and was saved in between would count as run again)
        after = self.ledger_starts()
        for key in saved_now:
            self.saved.setdefault(key, after[key])
        for key, seen in self.saved.items():
            if after[key] > seen:
                self.t.duplicate_executions += after[key] - seen
                self.t.violations.append(f"{key} ran again after its result was saved")
                self.saved[key] = after[key]

    def read(self, server: LiveServer, cid: str, messages: list[str], timeout: float = 10.0) -> dict[str, Any]:
        """The conversation as the API shows it. A queued message whose run has just started
        is in neither its messages nor its queue until that run writes it into the thread
        (its claim is durable: reclaimed, it goes back to the queue), so while a run is active
        and an acknowledged message is in neither, read again."""
        deadline = time.monotonic() + timeout
        while True:
            detail: dict[str, Any] = server.get(f"/api/conversations/{cid}").json()
            shown = {m["content"] for m in detail["messages"] if m["role"] == "user"}
            shown |= {q["text"] for q in detail.get("queued", [])}
            if set(messages) <= shown or "activeRun" not in detail or time.monotonic() > deadline:
                return detail
            time.sleep(0.05)

    # --- actions ------------------------------------------------------------------------

    def resume_all(self, server: LiveServer, wait: bool) -> None:
        for cid in list(self.acked):
            detail = server.get(f"/api/conversations/{cid}").json()
            if not detail["resumable"]:
                continue
            body: dict[str, Any] = {"resume": True, "conversation": cid}
            if detail.get("decisionRequired"):
                body["decision"] = "retry"
            if server.post("/api/chat", body).status_code == 200 and wait:
                self.follow(server, cid)

    def settle(self, server: LiveServer, timeout: float = 60.0) -> None:
        """Wait for the queues to drain (each queued run resumed if a kill interrupted it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            busy = False
            for cid in self.acked:
                detail = server.get(f"/api/conversations/{cid}").json()
                if "activeRun" in detail or detail.get("queued"):
                    busy = True
            if not busy:
                self.resume_all(server, wait=True)
                return
            time.sleep(0.2)

    def follow(self, server: LiveServer, cid: str) -> None:
        with httpx.stream("GET", f"{server.url}/api/chat", params={"conversation": cid}, timeout=60) as r:
            for _ in r.iter_lines():
                pass

    def send(self, server: LiveServer) -> None:
        self.turn += 1
        cid = self.rng.choice([*self.acked, None, None]) if len(self.acked) < 4 else self.rng.choice(list(self.acked))
        message = f"turn-{self.turn}"
        body: dict[str, Any] = {"message": message, **({"conversation": cid} if cid else {})}
        if self.queue and cid:
            body["multitask"] = "enqueue"
        try:
            response = server.post("/api/chat", body)
        except httpx.HTTPError:
            return
        if response.status_code == 200:
            got = response.json()["conversation"]
            self.acked.setdefault(got, []).append(message)
            self.t.acknowledged += 1
            self.t.queued += "queued" in response.json()

    def pick(self) -> int:
        """A random server; with one, no draw (the single-process run keeps its sequence)."""
        return self.rng.randrange(len(self.servers)) if len(self.servers) > 1 else 0

    def start(self) -> LiveServer:
        return LiveServer(self.env, self.dir).start(timeout=120)

    def trial(self) -> None:
        """Start what is missing, resume and send turns through random servers, then kill
        one of them at a random moment."""
        while len(self.servers) < PROCESSES["postgres" if self.url else "sqlite"]:
            self.servers.append(self.start())
        try:
            self.check(self.servers[self.pick()])
            self.resume_all(self.servers[self.pick()], wait=False)
            for _ in range(self.rng.randint(1, 2)):
                self.send(self.servers[self.pick()])
            time.sleep(self.rng.uniform(0.0, 1.5))
        finally:
            victim = self.servers.pop(self.pick())
            victim.kill()
        self.t.kills += 1
        self.t.trials += 1

    def finish(self) -> None:
        self.servers.append(self.start())
        try:
            server = self.servers[-1]
            time.sleep(1.0)  # the others' maintenance reclaims what the last victim left
            self.check(server)
            for _ in range(3):
                self.resume_all(server, wait=True)
            self.settle(server)
            self.check(server, final=True)
            if self.receiver is not None:
                self.check_traces()
        finally:
            for server in self.servers:
                server.stop()
        starts = self.ledger_starts()
        self.t.reexecutions_in_flight = sum(n - 1 for n in starts.values() if n > 1)
        self.ollama.stop()
        if self.receiver is not None:
            self.receiver.stop()

    def check_traces(self) -> None:
        assert self.receiver is not None
        missing = wait_shipped(self.receiver, self.db, self.url)
        spans = self.receiver.snapshot()
        found = trace_violations(spans, len(self.ollama.requests), self.ledger_starts(), missing)
        self.t.spans = len({s.span_id for s in spans})
        self.t.span_resends = len(spans) - self.t.spans
        self.t.spans_interrupted = len({s.span_id for s in spans if s.attributes.get("sophos.interrupted") is True})
        self.t.trace_violations = len(found)
        self.t.violations += found


@contextmanager
def database(backend: str) -> Iterator[str]:
    """ "" for SQLite (the file under the work directory), else a new PostgreSQL database."""
    if backend != "postgres":
        yield ""
        return
    with postgres_server() as server:
        yield create_database(server)


def run(
    kills: int, seed: int, workdir: Path, progress: int = 0, database_url: str = "", queue: bool = False, traces: bool = False
) -> Tallies:
    torture = Torture(workdir, seed, database_url, queue, traces)
    started = time.monotonic()
    for i in range(kills):
        torture.trial()
        if progress and (i + 1) % progress == 0:
            t = torture.t
            print(
                f"[{time.monotonic() - started:5.0f} s] kills {t.kills} acknowledged {t.acknowledged} "
                f"lost {t.lost_messages} duplicates {t.duplicate_executions} stuck {t.stuck_runs} "
                f"integrity {t.integrity_failures} violations {len(t.violations)}",
                flush=True,
            )
    torture.finish()
    return torture.t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kills", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--backend", choices=sorted(PROCESSES), default="sqlite")
    parser.add_argument("--queue", action="store_true", help="queue turns sent to busy conversations")
    parser.add_argument("--traces", action="store_true", help="export traces and check every call has its span")
    args = parser.parse_args()
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="sophos-soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with database(args.backend) as url:
        tallies = run(args.kills, args.seed, workdir, progress=50, database_url=url, queue=args.queue, traces=args.traces)
    print(tallies.table())
    print(f"{'seconds':<30} {time.monotonic() - started:.0f}")
    for v in tallies.violations[:20]:
        print("violation:", v)
    raise SystemExit(0 if tallies.ok() else 1)


if __name__ == "__main__":
    main()
