"""Managing users and their API tokens (`sophos users`). Disabling a user or revoking one
of their tokens ends that user's login sessions at once, for every process: a browser
logged in with a revoked token must log in again."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from domain.audit import Action
from domain.errors import UserExists, UserNotFound
from domain.model import utc_now
from domain.principals import (
    BOOTSTRAP_ID,
    ApiToken,
    Role,
    User,
    new_token,
    new_user_id,
    token_label,
    user_name,
)
from ports.sessions import SessionStore
from ports.users import UserStore
from services.audit import NO_AUDIT, AuditTrail

if TYPE_CHECKING:  # the run ports take ~0.1 s to import: `sophos users` and the CLI's start do without
    from ports.backend import RunStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IssuedToken:
    """A new token: `token` is shown once and never stored."""

    record: ApiToken
    token: str


@dataclass(frozen=True)
class Added:
    """A user added, and what changed with them."""

    user: User
    first: bool  # no user existed before: from now on every request needs a token or a login
    unclaimed: int  # conversations still the bootstrap admin's (made without a token, or with API_TOKEN)


@dataclass(frozen=True)
class Claimed:
    """The bootstrap admin's history given to a user (`claim`)."""

    user: User
    created: bool  # the user did not exist: made for this
    conversations: int
    rules: int  # "always allow" rules


class UserService:
    def __init__(
        self,
        users: UserStore,
        sessions: SessionStore,
        *,
        history: RunStore | None = None,
        clock: Callable[[], datetime] = utc_now,
        audit: AuditTrail = NO_AUDIT,
    ) -> None:
        self.audit = audit  # every change of a user or a token
        self.users = users
        self.sessions = sessions
        self.history = history  # the conversations and their rules; None: no history to give
        self._clock = clock

    async def add(self, name: str, role: Role = Role.USER) -> User:
        """A new enabled user. InvalidInput for a name that cannot be one, UserExists (naming
        the user who has it) when taken."""
        wanted = user_name(name)
        try:
            user = await self.users.add_user(new_user_id(), wanted, role, self._clock())
        except UserExists:
            found = await self.users.user(wanted)  # names compare case-insensitively: say whose it is
            raise UserExists(
                f"A user named {found.name if found else wanted!r} exists already"
                + (f" ({found.id}, {found.role.value})" if found else "")
            ) from None
        log.info("user %s added (%s, role %s)", user.name, user.id, role.value)
        await self.audit.record(Action.USER_ADDED, user.name, f"{user.id}, role {role.value}")
        return user

    async def join(self, name: str, role: Role = Role.USER) -> Added:
        """Add a user (as `add`) and say what changed: whether they are the first (a server
        used without a token needs one from now on, the page a login) and how many
        conversations are still the bootstrap admin's, which none of the users sees."""
        first = not await self.users.any_users()
        user = await self.add(name, role)
        return Added(user, first, await self.unclaimed())

    async def unclaimed(self) -> int:
        """How many conversations are the bootstrap admin's: made before any user existed
        without a token (or with API_TOKEN), and seen by no user until one claims them."""
        return len(await self.history.list_conversations(owner=BOOTSTRAP_ID)) if self.history else 0

    async def claim(self, name_or_id: str, role_if_new: Role = Role.ADMIN) -> Claimed:
        """Give the bootstrap admin's history, its conversations (with everything of them)
        and its "always allow" rules, to a user, made (with `role_if_new`: the person who
        had the server alone was its admin) when there is none of that name. Idempotent:
        what is claimed again is what the bootstrap admin made since."""
        try:
            user, created = await self.get(name_or_id), False
        except UserNotFound:
            user, created = await self.add(name_or_id, role_if_new), True
        conversations = rules = 0
        if self.history is not None:
            conversations = await self.history.give_conversations(BOOTSTRAP_ID, user.id)
            rules = await self.history.give_rules(BOOTSTRAP_ID, user.id)
        await self.audit.record(Action.USER_CLAIMED, user.name, f"{conversations} conversations, {rules} rules")
        log.info(
            "%d conversations and %d always-allow rules of the bootstrap admin given to %s (%s)",
            conversations,
            rules,
            user.name,
            user.id,
        )
        return Claimed(user, created, conversations, rules)

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
        await self.audit.record(Action.USER_DISABLED if disabled else Action.USER_ENABLED, user.name, user.id)
        if disabled:
            ended = await self.sessions.delete_principal(user.id)
            log.info("user %s disabled; %d login sessions ended", user.name, ended)
        return await self.get(user.id)

    async def issue_token(self, name_or_id: str, label: str = "") -> IssuedToken:
        user = await self.get(name_or_id)
        made = new_token()
        record = await self.users.add_token(made.id, user.id, made.hash, token_label(label), self._clock())
        log.info("token %s issued to %s", record.id, user.name)
        await self.audit.record(Action.TOKEN_ISSUED, record.id, f"for {user.name}")
        return IssuedToken(record, made.token)

    async def revoke(self, token_id: str) -> ApiToken:
        """Revoke a token; its user's login sessions end too (a session does not record
        which token opened it, and a revoke means "this credential leaked")."""
        record = await self.users.revoke_token(token_id.strip(), self._clock())
        if record is None:
            raise UserNotFound(f"No token {token_id!r}")
        ended = await self.sessions.delete_principal(record.user_id)
        await self.audit.record(Action.TOKEN_REVOKED, record.id, f"of {record.user_id}")
        log.info("token %s revoked; %d login sessions of %s ended", record.id, ended, record.user_id)
        return record
