"""Who may use the API when API_TOKEN is set: the bearer token, or a login session.

The page's login exchanges the token for a random session id stored server-side (hashed)
with a fixed end. Every wrong token, at the login or as a bearer, counts against the
client's address; past the limit that address is refused (TooManyAttempts) before its
token is even compared, so a refused guesser learns nothing. Each failure is logged with
the address, never with what was sent.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable
from datetime import datetime

from domain.errors import TooManyAttempts
from domain.model import utc_now
from domain.sessions import FailedAttempts, open_session, session_key, token_fingerprint, well_formed
from ports.sessions import SessionStore

log = logging.getLogger(__name__)


def token_bytes(token: str) -> bytes:
    """The configured token as bytes (an environment value may carry undecodable bytes)."""
    return token.encode("utf-8", "surrogateescape")


class SessionService:
    """`token` empty: no login is needed and every method but the log-outs allows all."""

    def __init__(
        self,
        store: SessionStore,
        token: str,
        lifetime_seconds: float,
        attempts: FailedAttempts | None = None,
        clock: Callable[[], datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.lifetime_seconds = lifetime_seconds
        self._token = token_bytes(token)
        self._fingerprint = token_fingerprint(self._token)
        self._attempts = attempts or FailedAttempts()
        self._clock = clock
        self._monotonic = monotonic

    @property
    def required(self) -> bool:
        return bool(self._token)

    def _check(self, given: bytes, client: str, what: str) -> bool:
        now = self._monotonic()
        wait = self._attempts.retry_after(client, now)
        if wait is not None:
            raise TooManyAttempts(wait)
        if hmac.compare_digest(given, self._token):
            return True
        failures = self._attempts.record(client, now)
        log.warning("%s from %s: wrong API token (%d of %d allowed per %.0f s)", what, client, failures,
                    self._attempts.limit, self._attempts.window)
        return False

    def bearer(self, given: bytes, client: str) -> bool:
        """Whether a bearer credential is the token; a wrong one counts as a failed login.
        TooManyAttempts when `client` failed too often lately."""
        return not self.required or self._check(given, client, "bearer token")

    async def login(self, given: bytes, client: str) -> str | None:
        """A new session's id for the browser when `given` is the token, else None (a failed
        login). TooManyAttempts when `client` failed too often lately. Without a token set,
        None: there is nothing to log in to."""
        if not self.required or not self._check(given, client, "login"):
            return None
        now = self._clock()
        new = open_session(now, self.lifetime_seconds)
        await self.store.create(new.key, self._fingerprint, now, new.expires_at)
        return new.session_id

    async def valid(self, session_id: str) -> bool:
        """Whether a cookie's value names a live session made under the current token."""
        if not self.required:
            return True
        if not well_formed(session_id):  # hostile or stale values cost no database read
            return False
        return await self.store.valid(session_key(session_id), self._fingerprint, self._clock())

    async def logout(self, session_id: str) -> None:
        """End that session for every process (a copy of the cookie stops working too)."""
        if well_formed(session_id):
            await self.store.delete(session_key(session_id))

    async def logout_everywhere(self) -> int:
        """End every session (every browser must log in again); how many there were."""
        count = await self.store.delete_all()
        log.info("log out everywhere: %d login sessions ended", count)
        return count
