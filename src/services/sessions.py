"""Who may use the API, and as whom: API_TOKEN (the bootstrap admin), a user's API token,
or a login session made with either.

Without API_TOKEN and without users, no login is needed and every request acts as the
bootstrap admin (the server then listens on loopback only). Once a user exists, a request
must name someone. The page's login exchanges a token for a random session id stored
server-side (hashed) with a fixed end and the user it acts as. Every wrong token, at the login or as a bearer, counts against the
client's address; past the limit that address is refused (TooManyAttempts) before its
token is even compared, so a refused guesser learns nothing. Each failure is logged with
the address, never with what was sent.
"""

from __future__ import annotations

import dataclasses
import hmac
import logging
import time
from collections.abc import Callable
from datetime import datetime

from domain.audit import Action
from domain.errors import InvalidInput, TooManyAttempts, UserExists
from domain.model import utc_now
from domain.principals import (
    BOOTSTRAP_ADMIN,
    BOOTSTRAP_ID,
    Principal,
    ProxyTrust,
    Role,
    looks_like_token,
    new_user_id,
    token_hash,
    user_name,
)
from domain.sessions import FailedAttempts, open_session, session_key, token_fingerprint, well_formed
from ports.sessions import SessionStore
from ports.users import UserStore
from services.audit import NO_AUDIT, AuditTrail

USERS_RECHECK = 1.0  # seconds a "no users yet" answer is trusted before the store is asked again

log = logging.getLogger(__name__)


def token_bytes(token: str) -> bytes:
    """The configured token as bytes (an environment value may carry undecodable bytes)."""
    return token.encode("utf-8", "surrogateescape")


class SessionService:
    """`token` empty and no `users` stored: no login is needed and every method but the
    log-outs allows all, as the bootstrap admin. `admin_sees_all`: the admins' principals
    reach every user's conversations (ADMIN_SEES_ALL)."""

    def __init__(
        self,
        store: SessionStore,
        token: str,
        lifetime_seconds: float,
        attempts: FailedAttempts | None = None,
        clock: Callable[[], datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
        users: UserStore | None = None,
        admin_sees_all: bool = False,
        proxy: ProxyTrust | None = None,
        audit: AuditTrail = NO_AUDIT,
    ) -> None:
        self.audit = audit  # logins and failed logins
        self.proxy = proxy
        self.store = store
        self.users = users
        self.lifetime_seconds = lifetime_seconds
        self.admin_sees_all = admin_sees_all
        self._token = token_bytes(token)
        self._fingerprint = token_fingerprint(self._token)
        self._attempts = attempts or FailedAttempts()
        self._clock = clock
        self._monotonic = monotonic
        self._users_seen = False
        self._users_checked = float("-inf")

    @property
    def required(self) -> bool:
        """Whether API_TOKEN is set (see `needed` for whether any login is)."""
        return bool(self._token)

    @property
    def users_seen(self) -> bool:
        """Whether this process has seen a user exist (as of the last `needed`)."""
        return self._users_seen

    async def needed(self) -> bool:
        """Whether a request must name someone: API_TOKEN is set or a user exists. Users are
        never deleted, so once one is seen the answer stays; "none yet" is asked again after
        USERS_RECHECK seconds (a user added by the CLI while the server runs)."""
        if self._token or self._users_seen or self.proxy is not None:
            return True
        if self.users is None:
            return False
        now = self._monotonic()
        if now - self._users_checked >= USERS_RECHECK:
            self._users_checked = now
            self._users_seen = await self.users.any_users()
        return self._users_seen

    def _as(self, principal: Principal) -> Principal:
        return dataclasses.replace(principal, sees_all=True) if principal.is_admin and self.admin_sees_all else principal

    def _refuse_if_throttled(self, client: str) -> None:
        wait = self._attempts.retry_after(client, self._monotonic())
        if wait is not None:
            raise TooManyAttempts(wait)

    def _failed(self, client: str, what: str) -> None:
        failures = self._attempts.record(client, self._monotonic())
        log.warning(
            "%s from %s: wrong API token (%d of %d allowed per %.0f s)",
            what,
            client,
            failures,
            self._attempts.limit,
            self._attempts.window,
        )

    async def _token_principal(self, given: bytes) -> Principal | None:
        if self._token and hmac.compare_digest(given, self._token):
            return BOOTSTRAP_ADMIN
        if self.users is not None and looks_like_token(given):
            return await self.users.by_token(token_hash(given), self._clock())
        return None

    async def principal_of_bearer(self, given: bytes, client: str) -> Principal | None:
        """Whom a bearer credential (API_TOKEN or a user's token) names; None counts as a
        failed login. Without any login needed, the bootstrap admin whatever was sent.
        TooManyAttempts when `client` failed too often lately."""
        if not await self.needed():
            return self._as(BOOTSTRAP_ADMIN)
        self._refuse_if_throttled(client)
        found = await self._token_principal(given)
        if found is None:
            self._failed(client, "bearer token")
            await self.audit.record(Action.LOGIN_FAILED, detail="bearer token", actor="unknown", origin=client)
            return None
        return self._as(found)

    async def principal_of_proxy(self, name: str, peer: str) -> Principal | None:
        """Whom a proxy's user header names (AUTH=proxy): believed only from a trusted peer;
        from any other address it is ignored (None) and logged. A user first seen is created
        with role `user` when PROXY_AUTO_CREATE, else refused until added; a disabled user
        is refused."""
        if self.proxy is None or self.users is None:
            return None
        if not self.proxy.trusts(peer):
            log.warning("ignored the %s header from %s: not a TRUSTED_PROXY_IPS address", self.proxy.header, peer)
            return None
        try:
            checked = user_name(name)
        except InvalidInput:
            log.warning("refused the %s header from %s: not a user name", self.proxy.header, peer)
            return None
        user = await self.users.user(checked)
        if user is None and self.proxy.auto_create:
            try:
                user = await self.users.add_user(new_user_id(), checked, Role.USER, self._clock())
                log.info("user %s created on first sight through the proxy", checked)
                await self.audit.record(
                    Action.USER_ADDED, checked, "on first sight (PROXY_AUTO_CREATE)", actor="proxy", origin=peer
                )
            except UserExists:  # another process created them meanwhile
                user = await self.users.user(checked)
        if user is None:
            log.warning("refused %s from the proxy: no such user (PROXY_AUTO_CREATE=false)", checked)
            return None
        return None if user.disabled else self._as(user.principal())

    async def bearer_still_valid(self, given: bytes) -> bool:
        """Whether a bearer that worked still names someone (not counted as a login attempt)."""
        return await self._token_principal(given) is not None

    async def principal_of_session(self, session_id: str) -> Principal | None:
        """Whom a cookie's session acts as: a live session made under the current API_TOKEN
        whose user is still enabled; None otherwise. Without any login needed, the
        bootstrap admin."""
        if not await self.needed():
            return self._as(BOOTSTRAP_ADMIN)
        if not well_formed(session_id):  # hostile or stale values cost no database read
            return None
        user_id = await self.store.user_of(session_key(session_id), self._fingerprint, self._clock())
        if user_id is None:
            return None
        if user_id == BOOTSTRAP_ID:
            return self._as(BOOTSTRAP_ADMIN) if self._token else None
        found = await self.users.principal(user_id) if self.users is not None else None
        return None if found is None else self._as(found)

    async def login(self, given: bytes, client: str) -> str | None:
        """A new session's id for the browser when `given` is API_TOKEN or an enabled user's
        token, else None (a failed login). TooManyAttempts when `client` failed too often
        lately. Without any login needed, None: there is nothing to log in to."""
        if not await self.needed():
            return None
        self._refuse_if_throttled(client)
        principal = await self._token_principal(given)
        if principal is None:
            self._failed(client, "login")
            await self.audit.record(Action.LOGIN_FAILED, detail="login", actor="unknown", origin=client)
            return None
        now = self._clock()
        new = open_session(now, self.lifetime_seconds)
        await self.store.create(new.key, self._fingerprint, now, new.expires_at, principal.user_id)
        await self.audit.record(Action.LOGIN, detail="login", actor=principal.name, origin=client)
        return new.session_id

    async def logout(self, session_id: str) -> None:
        """End that session for every process (a copy of the cookie stops working too)."""
        if well_formed(session_id):
            await self.store.delete(session_key(session_id))

    async def logout_everywhere(self, principal: Principal = BOOTSTRAP_ADMIN) -> int:
        """End every session of that user (every browser of theirs must log in again); how
        many there were. With one API_TOKEN and no users, that is every session."""
        count = await self.store.delete_principal(principal.user_id)
        log.info("log out everywhere: %d login sessions of %s ended", count, principal.user_id)
        return count
