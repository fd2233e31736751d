"""The SpanStore contract (issue 47 item 2), run against every adapter (memory, SQLite,
PostgreSQL), each beside its run store (a span is shipped by its run's state)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import date

import pytest

from adapters.memory.traces import InMemorySpanStore
from adapters.memory.usage import InMemoryUsageStore
from adapters.postgres.database import PostgresDatabase
from adapters.postgres.traces import PostgresSpanStore
from adapters.postgres.usage import PostgresUsageStore
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.traces import SqliteSpanStore
from adapters.sqlite.usage import SqliteUsageStore
from domain.model import Run, RunStatus
from domain.traces import SpanEnd, SpanKind, SpanRecord, SpanStatus, agent_span_id, chat_span_id, tool_span_id, trace_id
from domain.usage import Cost
from ports.runs import RunFinish
from ports.traces import SpanStore
from ports.usage import UsageStore
from tests.contracts.run_stores import (
    InMemoryStores,
    PostgresStores,
    RunStore,
    SqliteStores,
    StoreClock,
    a_running_run,
)

T0 = 1_700_000_000_000_000_000
DAY = date(2026, 3, 1)


def agent_span(run: Run, started: int = T0, parent: str | None = None, trace: str | None = None) -> SpanRecord:
    return SpanRecord(
        agent_span_id(run.id),
        trace or trace_id(run.conversation_id, run.id),
        parent,
        run.conversation_id,
        run.id,
        SpanKind.AGENT,
        "invoke_agent sophos",
        started,
        attributes={"gen_ai.operation.name": "invoke_agent"},
    )


def child(run: Run, kind: SpanKind, span_id: str, started: int = T0 + 1) -> SpanRecord:
    name = "chat qwen3" if kind is SpanKind.CHAT else "execute_tool append"
    return SpanRecord(
        span_id,
        trace_id(run.conversation_id, run.id),
        agent_span_id(run.id),
        run.conversation_id,
        run.id,
        kind,
        name,
        started,
        attributes={"gen_ai.request.model": "qwen3"},
    )


class SpanStoreContract:
    @pytest.fixture
    def spans(self, store: RunStore) -> SpanStore:
        raise NotImplementedError

    @pytest.fixture
    def usage(self, spans: SpanStore) -> UsageStore:
        """The backend's usage store, beside `spans`."""
        raise NotImplementedError

    async def test_a_model_calls_span_ends_with_its_usage_row(
        self, store: RunStore, clock: StoreClock, spans: SpanStore, usage: UsageStore
    ) -> None:
        run = await a_running_run(store, clock)
        chat = chat_span_id(run.id, 1, 0)
        await spans.record([agent_span(run), child(run, SpanKind.CHAT, chat)])
        user = f"user-{run.id}"
        ending = SpanEnd(chat, T0 + 5, SpanStatus.OK, {"gen_ai.usage.input_tokens": 7})
        await usage.add(user, "qwen3", DAY, Cost(7, 3, 0.5, 0.0, 1), ending)
        await usage.add(user, "qwen3", DAY, Cost(1, 1, 0.5, 0.0, 1), SpanEnd(chat, T0 + 9, SpanStatus.ERROR, {}))
        (pending,) = [p for p in await spans.claim("me", 1000.0, 30.0, 1000) if p.span.run_id == run.id]
        assert (pending.span.span_id, pending.span.ended, pending.span.status) == (chat, T0 + 5, SpanStatus.OK)
        assert pending.span.attributes == {"gen_ai.request.model": "qwen3", "gen_ai.usage.input_tokens": 7}
        assert await usage.tokens(user, DAY) == 12  # the second row counted, its end ignored: the span had ended

    async def test_a_running_runs_spans_wait_but_its_ended_calls_ship(
        self, store: RunStore, clock: StoreClock, spans: SpanStore
    ) -> None:
        run = await a_running_run(store, clock)
        chat, tool = chat_span_id(run.id, 1, 0), tool_span_id(run.id, "call-1")
        await spans.record([agent_span(run)])
        await spans.record([child(run, SpanKind.CHAT, chat)])
        await spans.record([child(run, SpanKind.TOOL, tool)])
        await spans.end(
            chat, T0 + 5, SpanStatus.OK, {"gen_ai.usage.input_tokens": 7, "gen_ai.response.finish_reasons": ("stop",)}
        )
        pending = await spans.claim("me", 1000.0, 30.0, 1000)
        assert [p.span.span_id for p in pending] == [chat]
        (ended,) = pending
        assert ended.run_status == "running" and ended.span.ended == T0 + 5 and ended.span.status is SpanStatus.OK
        assert ended.span.attributes == {
            "gen_ai.request.model": "qwen3",
            "gen_ai.usage.input_tokens": 7,
            "gen_ai.response.finish_reasons": ("stop",),
        }

    async def test_once_the_run_ends_its_span_and_its_cut_calls_ship_with_its_end(
        self, store: RunStore, clock: StoreClock, spans: SpanStore
    ) -> None:
        run = await a_running_run(store, clock)
        tool = tool_span_id(run.id, "call-1")
        await spans.record([agent_span(run)])
        await spans.record([child(run, SpanKind.TOOL, tool)])
        assert await store.finish_run(run.id, RunFinish(RunStatus.INTERRUPTED, clock.now()))
        pending = {p.span.span_id: p for p in await spans.claim("me", 1000.0, 30.0, 1000)}
        assert set(pending) == {agent_span_id(run.id), tool}
        assert pending[tool].run_status == "interrupted" and pending[tool].span.ended is None
        assert pending[tool].run_finished is not None and pending[tool].run_finished >= int(run.started_at.timestamp() * 1e9)

    async def test_recording_again_changes_nothing_and_an_end_comes_once(
        self, store: RunStore, clock: StoreClock, spans: SpanStore
    ) -> None:
        run = await a_running_run(store, clock)
        chat = chat_span_id(run.id, 1, 0)
        await spans.record([child(run, SpanKind.CHAT, chat)])
        await spans.record([child(run, SpanKind.CHAT, chat, started=T0 + 99)])
        await spans.end(chat, T0 + 5, SpanStatus.OK, {})
        await spans.end(chat, T0 + 9, SpanStatus.ERROR, {"error.type": "late"})
        (pending,) = await spans.claim("me", 1000.0, 30.0, 1000)
        assert (pending.span.started, pending.span.ended, pending.span.status) == (T0 + 1, T0 + 5, SpanStatus.OK)
        assert "error.type" not in pending.span.attributes

    async def test_a_claim_is_leased_and_an_acknowledged_span_never_comes_back(
        self, store: RunStore, clock: StoreClock, spans: SpanStore
    ) -> None:
        run = await a_running_run(store, clock)
        ids = [chat_span_id(run.id, step, 0) for step in range(3)]
        for i, span_id in enumerate(ids):
            await spans.record([child(run, SpanKind.CHAT, span_id, started=T0 + i)])
            await spans.end(span_id, T0 + 10, SpanStatus.OK, {})
        first = await spans.claim("a", 1000.0, 30.0, 2)
        assert [p.span.span_id for p in first] == ids[:2]  # oldest first, `limit` at most
        assert [p.span.span_id for p in await spans.claim("b", 1001.0, 30.0, 10)] == ids[2:]
        assert await spans.claim("b", 1002.0, 30.0, 10) == []
        await spans.acknowledge([ids[0]])
        # a's lease ran out (it died, or its acknowledgement was lost): the rest is claimed again
        assert [p.span.span_id for p in await spans.claim("b", 1031.0, 30.0, 10)] == ids[1:]
        await spans.acknowledge(ids[1:])
        assert await spans.claim("b", 5000.0, 30.0, 10) == []
        assert await spans.unacknowledged() == 0

    async def test_claims_at_once_never_share_a_span(self, store: RunStore, clock: StoreClock, spans: SpanStore) -> None:
        run = await a_running_run(store, clock)
        ids = [tool_span_id(run.id, f"call-{i}") for i in range(40)]
        for span_id in ids:
            await spans.record([child(run, SpanKind.TOOL, span_id)])
            await spans.end(span_id, T0 + 10, SpanStatus.OK, {})
        batches = await asyncio.gather(*(spans.claim(f"p{i}", 1000.0, 30.0, 7) for i in range(8)))
        got = [p.span.span_id for batch in batches for p in batch if p.span.run_id == run.id]
        assert sorted(got) == sorted(ids) and len(got) == len(set(got))

    async def test_prune_deletes_only_acknowledged_spans_started_before_the_cut(
        self, store: RunStore, clock: StoreClock, spans: SpanStore
    ) -> None:
        run = await a_running_run(store, clock)
        old, new, unshipped = (tool_span_id(run.id, c) for c in ("old", "new", "unshipped"))
        await spans.record([child(run, SpanKind.TOOL, old, started=T0), child(run, SpanKind.TOOL, new, started=T0 + 100)])
        await spans.record([child(run, SpanKind.TOOL, unshipped, started=T0)])
        await spans.acknowledge([old, new])
        assert await spans.prune(T0 + 50) == 1
        assert await spans.unacknowledged() == 1
        await spans.end(unshipped, T0 + 1, SpanStatus.OK, {})
        assert [p.span.span_id for p in await spans.claim("me", 1000.0, 30.0, 10)] == [unshipped]
        await spans.acknowledge([unshipped])
        assert await spans.prune(T0 + 200) == 2

    async def test_the_latest_run_span_of_a_conversation_is_what_a_resume_joins(
        self, store: RunStore, clock: StoreClock, spans: SpanStore
    ) -> None:
        first = await a_running_run(store, clock)
        assert await spans.latest_run_span(first.conversation_id) is None
        await spans.record([agent_span(first)])
        assert await store.finish_run(first.id, RunFinish(RunStatus.INTERRUPTED, clock.now()))
        second = await a_running_run(store, clock, first.conversation_id)
        joined = agent_span(second, T0 + 50, parent=agent_span_id(first.id), trace=trace_id(first.conversation_id, first.id))
        await spans.record([joined])
        latest = await spans.latest_run_span(first.conversation_id)
        assert latest == joined


class TestInMemorySpanStore(InMemoryStores, SpanStoreContract):
    @pytest.fixture
    def spans(self, store: RunStore) -> SpanStore:
        return InMemorySpanStore(store)

    @pytest.fixture
    def usage(self, spans: SpanStore) -> UsageStore:
        assert isinstance(spans, InMemorySpanStore)
        return InMemoryUsageStore(spans)


class TestSqliteSpanStore(SqliteStores, SpanStoreContract):
    @pytest.fixture
    def spans(self, store: RunStore) -> SpanStore:
        assert isinstance(store, SqliteRunStore)
        return SqliteSpanStore(*store.workers())

    @pytest.fixture
    def usage(self, store: RunStore) -> UsageStore:
        assert isinstance(store, SqliteRunStore)
        return SqliteUsageStore(*store.workers())


class TestPostgresSpanStore(PostgresStores, SpanStoreContract):
    @pytest.fixture
    async def spans(self, pg_url: str, store: RunStore) -> AsyncIterator[SpanStore]:
        db = PostgresDatabase(pg_url)
        yield PostgresSpanStore(db)
        await db.close()

    @pytest.fixture
    async def usage(self, pg_url: str, spans: SpanStore) -> AsyncIterator[UsageStore]:
        db = PostgresDatabase(pg_url)
        yield PostgresUsageStore(db)
        await db.close()
