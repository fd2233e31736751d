"""UserStore: the users and their API tokens, kept where every process of the server sees them."""

from __future__ import annotations

from abc import abstractmethod
from datetime import datetime
from typing import Protocol

from domain.principals import ApiToken, Principal, Role, User


class UserStore(Protocol):
    """A token is known by its hash (domain.principals.token_hash): a store never sees a
    token. Every method takes effect for all processes sharing the store as soon as it
    returns; times are the caller's clock, passed in (`now`)."""

    @abstractmethod
    async def add_user(self, user_id: str, name: str, role: Role, now: datetime) -> User:
        """Store a new, enabled user. UserExists when another user has that name (names
        compare case-insensitively: `Ann` and `ann` are one person)."""

    @abstractmethod
    async def user(self, name_or_id: str) -> User | None:
        """The user with that id, or else with that name (case-insensitively); None when neither."""

    @abstractmethod
    async def users(self) -> list[User]:
        """Every user, oldest first."""

    @abstractmethod
    async def any_users(self) -> bool:
        """Whether at least one user exists (enabled or not). Only reads."""

    @abstractmethod
    async def set_disabled(self, user_id: str, disabled: bool) -> bool:
        """Disable (or enable again) a user; False when there is no such user. A disabled
        user's tokens resolve to no principal until enabled again."""

    @abstractmethod
    async def delete_user(self, user_id: str) -> bool:
        """Delete the user with their tokens and the small things kept by their id in the
        same store (saved chat settings, always-allow rules, usage rows); False when there is
        none. Their conversations, store items and collections are deleted before, by the
        service (services.user_data.UserDeletion)."""

    @abstractmethod
    async def add_token(self, token_id: str, user_id: str, token_hash: str, label: str, now: datetime) -> ApiToken:
        """Store a token of that user. UserNotFound when the user does not exist."""

    @abstractmethod
    async def tokens(self, user_id: str) -> list[ApiToken]:
        """That user's tokens, revoked ones included, oldest first."""

    @abstractmethod
    async def revoke_token(self, token_id: str, now: datetime) -> ApiToken | None:
        """Revoke a token (at `now`; a token revoked already keeps its first time); the
        token's record, or None when there is no such token."""

    @abstractmethod
    async def by_token(self, token_hash: str, now: datetime, touch_after: float = 60.0) -> Principal | None:
        """The principal of an enabled user whose token, not revoked, has that hash; None
        otherwise. Records `now` as the token's last use when the one recorded is older
        than `touch_after` seconds (so a busy client does not write on every request).
        That record is best-effort: a write refused (StorageFailure: a full disk, a busy or
        read-only file) is logged and the principal returned all the same, so a token
        keeps working for reads whatever the database accepts."""

    @abstractmethod
    async def principal(self, user_id: str) -> Principal | None:
        """The principal of that user while enabled; None when disabled or unknown. Only reads."""
