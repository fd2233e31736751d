"""SessionStore: the page's login sessions, kept where every process of the server sees them."""

from __future__ import annotations

from abc import abstractmethod
from datetime import datetime
from typing import Protocol

from domain.principals import BOOTSTRAP_ID


class SessionStore(Protocol):
    """Sessions are named by their key, a hash of the session id (domain.sessions.session_key):
    a store never sees an id, so nothing it holds can be sent back as a cookie. Every
    method takes effect for all processes sharing the store as soon as it returns. Times
    are the caller's clock, passed in (`now`), so every backend expires alike."""

    @abstractmethod
    async def create(
        self, key: str, fingerprint: str, now: datetime, expires_at: datetime, principal: str = BOOTSTRAP_ID
    ) -> None:
        """Store a session of the user whose id is `principal` (the bootstrap admin's by
        default), made under the API token whose fingerprint is `fingerprint`,
        valid while `now < expires_at`. On the way, delete every session expired at `now`
        or made under another fingerprint: they can never be valid again, and this keeps
        the store as small as the live sessions. A key stored already is replaced."""

    @abstractmethod
    async def user_of(self, key: str, fingerprint: str, now: datetime) -> str | None:
        """The user id of the session `key` names when it is a stored session made under
        `fingerprint` that has not expired at `now` (`now < expires_at`); None otherwise.
        Only reads."""

    @abstractmethod
    async def delete(self, key: str) -> bool:
        """Delete that session (log-out); False when there was none."""

    @abstractmethod
    async def delete_principal(self, principal: str) -> int:
        """Delete every session of that user (log-out everywhere, a revoke, a disable); how many."""
