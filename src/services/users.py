"""Managing users and their API tokens (`sophos users`). Disabling a user or revoking one
of their tokens ends that user's login sessions at once, for every process: a browser
logged in with a revoked token must log in again."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from domain.errors import UserExists, UserNotFound
from domain.model import utc_now
from domain.principals import ApiToken, Role, User, new_token, new_user_id, token_label, user_name
from ports.sessions import SessionStore
from ports.users import UserStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IssuedToken:
    """A new token: `token` is shown once and never stored."""

    record: ApiToken
    token: str


class UserService:
    def __init__(self, users: UserStore, sessions: SessionStore, clock: Callable[[], datetime] = utc_now) -> None:
        self.users = users
        self.sessions = sessions
        self._clock = clock

    async def add(self, name: str, role: Role = Role.USER) -> User:
        """A new enabled user. InvalidInput for a name that cannot be one, UserExists (naming
        the user who has it) when taken."""
        wanted = user_name(name)
        try:
            user = await self.users.add_user(new_user_id(), wanted, role, self._clock())
        except UserExists:
            found = await self.users.user(wanted)  # names compare case-insensitively: say whose it is
            raise UserExists(f"A user named {found.name if found else wanted!r} exists already"
                             + (f" ({found.id}, {found.role.value})" if found else "")) from None
        log.info("user %s added (%s, role %s)", user.name, user.id, role.value)
        return user

    async def get(self, name_or_id: str) -> User:
        user = await self.users.user(name_or_id.strip())
        if user is None:
            raise UserNotFound(f"No user {name_or_id!r}")
        return user

    async def list(self) -> list[tuple[User, list[ApiToken]]]:
        return [(u, await self.users.tokens(u.id)) for u in await self.users.users()]

    async def set_disabled(self, name_or_id: str, disabled: bool = True) -> User:
        """Disable (or enable) a user; a disabled user's sessions end at once."""
        user = await self.get(name_or_id)
        await self.users.set_disabled(user.id, disabled)
        if disabled:
            ended = await self.sessions.delete_principal(user.id)
            log.info("user %s disabled; %d login sessions ended", user.name, ended)
        return await self.get(user.id)

    async def issue_token(self, name_or_id: str, label: str = "") -> IssuedToken:
        user = await self.get(name_or_id)
        made = new_token()
        record = await self.users.add_token(made.id, user.id, made.hash, token_label(label), self._clock())
        log.info("token %s issued to %s", record.id, user.name)
        return IssuedToken(record, made.token)

    async def revoke(self, token_id: str) -> ApiToken:
        """Revoke a token; its user's login sessions end too (a session does not record
        which token opened it, and a revoke means "this credential leaked")."""
        record = await self.users.revoke_token(token_id.strip(), self._clock())
        if record is None:
            raise UserNotFound(f"No token {token_id!r}")
        ended = await self.sessions.delete_principal(record.user_id)
        log.info("token %s revoked; %d login sessions of %s ended", record.id, ended, record.user_id)
        return record
