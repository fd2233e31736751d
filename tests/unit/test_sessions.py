"""Login sessions and the failed-login limit, on the in-memory store with clocks the test drives."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from adapters.memory.sessions import InMemorySessionStore
from domain.errors import TooManyAttempts
from domain.model import utc_now
from domain.sessions import FailedAttempts, attempt_source, session_key, well_formed
from services.sessions import SessionService

TOKEN = "unit-t0ken"


class Clocks:
    def __init__(self) -> None:
        self.wall = utc_now()
        self.mono = 1000.0

    def advance(self, seconds: float) -> None:
        self.wall += timedelta(seconds=seconds)
        self.mono += seconds


@pytest.fixture
def clocks() -> Clocks:
    return Clocks()


def service(
    clocks: Clocks, store: InMemorySessionStore | None = None, token: str = TOKEN, lifetime: float = 3600
) -> SessionService:
    return SessionService(
        store or InMemorySessionStore(), token, lifetime, clock=lambda: clocks.wall, monotonic=lambda: clocks.mono
    )


async def live(sessions: SessionService, session_id: str) -> bool:
    """Whether a cookie's value names a live session (of anyone)."""
    return await sessions.principal_of_session(session_id) is not None


async def test_each_login_is_a_new_random_session_that_ends_at_a_fixed_time(clocks: Clocks) -> None:
    sessions = service(clocks, lifetime=3600)
    first, second = await sessions.login(TOKEN.encode(), "10.0.0.1"), await sessions.login(TOKEN.encode(), "10.0.0.1")
    assert first is not None and second is not None and first != second
    assert well_formed(first) and TOKEN not in first
    clocks.advance(3000)
    assert await live(sessions, first)  # using it does not push its end back
    clocks.advance(600)
    assert not await live(sessions, first) and not await live(sessions, second)


async def test_log_out_ends_only_that_session_and_everywhere_ends_all(clocks: Clocks) -> None:
    sessions = service(clocks)
    ids = [await sessions.login(TOKEN.encode(), "10.0.0.1") for _ in range(3)]
    assert all(isinstance(i, str) for i in ids)
    await sessions.logout(str(ids[0]))
    assert [await live(sessions, str(i)) for i in ids] == [False, True, True]
    assert await sessions.logout_everywhere() == 2
    assert [await live(sessions, str(i)) for i in ids] == [False] * 3


async def test_a_new_api_token_ends_the_sessions_made_under_the_old(clocks: Clocks) -> None:
    store = InMemorySessionStore()
    old = await service(clocks, store).login(TOKEN.encode(), "10.0.0.1")
    assert old is not None
    assert not await live(service(clocks, store, token="another"), old)


async def test_malformed_cookies_are_refused_without_a_lookup(clocks: Clocks) -> None:
    class Counting(InMemorySessionStore):
        lookups = 0

        async def user_of(self, key: str, fingerprint: str, now: object) -> str | None:  # type: ignore[override]
            Counting.lookups += 1
            return None

    sessions = service(clocks, Counting())
    for value in ("", "x" * 10_000, "é" * 43, "a" * 42, "a" * 44, "../" * 15):
        assert not await live(sessions, value)
    assert Counting.lookups == 0


async def test_ten_wrong_tokens_a_minute_then_the_address_is_refused_even_the_right_token(
    clocks: Clocks, caplog: pytest.LogCaptureFixture
) -> None:
    sessions = service(clocks)
    caplog.set_level(logging.WARNING, "services.sessions")
    for i in range(10):
        assert await sessions.login(f"guess-{i}".encode(), "203.0.113.7") is None
        clocks.advance(1)
    with pytest.raises(TooManyAttempts) as refused:
        await sessions.login(TOKEN.encode(), "203.0.113.7")
    assert refused.value.retry_after == 50  # until the first failure is a minute old
    with pytest.raises(TooManyAttempts):
        await sessions.principal_of_bearer(TOKEN.encode(), "203.0.113.7")
    assert await sessions.login(TOKEN.encode(), "198.51.100.1") is not None  # another address
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 10 and all("203.0.113.7" in line for line in lines)
    assert not any("guess" in line or TOKEN in line for line in lines)
    clocks.advance(50)
    assert await sessions.login(TOKEN.encode(), "203.0.113.7") is not None


async def test_wrong_bearer_tokens_count_as_failed_logins(clocks: Clocks) -> None:
    sessions = service(clocks)
    for _ in range(10):
        assert await sessions.principal_of_bearer(b"wrong", "203.0.113.8") is None
    with pytest.raises(TooManyAttempts):
        await sessions.principal_of_bearer(TOKEN.encode(), "203.0.113.8")


def test_the_failure_table_forgets_the_oldest_addresses_past_its_size() -> None:
    attempts = FailedAttempts(limit=2, window=60, max_clients=100)
    for i in range(10_000):
        attempts.record(f"addr-{i}", 0.0)
    assert len(attempts._failures) == 100
    attempts.record("addr-9999", 1.0)
    assert attempts.retry_after("addr-9999", 1.0) == 59
    assert attempts.retry_after("addr-0", 1.0) is None


def test_failures_count_against_an_address_or_an_ipv6_slash_64() -> None:
    assert attempt_source("203.0.113.7") == "203.0.113.7"
    assert attempt_source("2001:db8:1:2:aaaa::1") == attempt_source("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert attempt_source("2001:db8:1:3::1") != attempt_source("2001:db8:1:2::1")
    assert attempt_source("::ffff:203.0.113.7") == "203.0.113.7"
    assert attempt_source("testclient") == "testclient"


def test_the_key_is_a_hash_of_the_id_not_the_id() -> None:
    assert session_key("a" * 43) != "a" * 43 and len(session_key("a" * 43)) == 64
