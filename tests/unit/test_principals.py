"""Principals, tokens and the proxy's trust, as plain values; users' tokens and sessions on
the in-memory stores with the services."""

from __future__ import annotations

import pytest

from adapters.memory.sessions import InMemorySessionStore
from adapters.memory.users import InMemoryUserStore
from domain.errors import InvalidInput, UserExists
from domain.principals import (
    BOOTSTRAP_ADMIN,
    LOCAL,
    Principal,
    ProxyTrust,
    Role,
    looks_like_token,
    new_token,
    owner_filter,
    sees,
    user_name,
)
from services.sessions import SessionService
from services.users import UserService


def test_a_token_is_random_shown_once_and_stored_as_its_hash() -> None:
    one, two = new_token(), new_token()
    assert one.token != two.token and one.hash != two.hash and one.token not in one.hash
    assert looks_like_token(one.token.encode()) and not looks_like_token(b"sophos_short")
    assert not looks_like_token("sophos_é".encode())


def test_names_are_checked_and_admin_is_taken() -> None:
    assert user_name(" ann@example.com ") == "ann@example.com"
    for bad in ("", "admin", "Admin", "a b", "-x", "x" * 255, "an\tn"):
        with pytest.raises(InvalidInput):
            user_name(bad)


def test_who_sees_what() -> None:
    ann = Principal("u_0000000000000001", "ann", Role.USER)
    assert sees(ann, ann.user_id) and not sees(ann, "u_0000000000000002") and not sees(BOOTSTRAP_ADMIN, ann.user_id)
    assert sees(LOCAL, ann.user_id) and owner_filter(LOCAL) is None and owner_filter(ann) == ann.user_id


def test_the_proxy_is_trusted_by_address_or_network_only() -> None:
    trust = ProxyTrust("Remote-User", "10.0.0.5, 192.168.1.0/24, fd00::/8", True)
    assert trust.header == "remote-user"
    assert trust.trusts("10.0.0.5") and trust.trusts("192.168.1.77") and trust.trusts("::ffff:10.0.0.5")
    assert trust.trusts("fd00::1")
    assert not trust.trusts("10.0.0.6") and not trust.trusts("testclient") and not trust.trusts("")
    with pytest.raises(InvalidInput):
        ProxyTrust("Remote-User", "proxy.example", True)


async def test_a_users_token_logs_in_and_a_revoke_or_disable_ends_their_sessions() -> None:
    users, sessions = InMemoryUserStore(), InMemorySessionStore()
    manage, auth = UserService(users, sessions), SessionService(sessions, "", 3600, users=users)
    assert not await auth.needed()
    ann = await manage.add("ann")
    with pytest.raises(UserExists):
        await manage.add("ANN")
    issued = await manage.issue_token("ann", "laptop")
    auth._users_checked = float("-inf")  # past the recheck interval
    assert await auth.needed()
    assert await auth.principal_of_bearer(issued.token.encode(), "10.0.0.1") == ann.principal()
    session = await auth.login(issued.token.encode(), "10.0.0.1")
    assert session is not None and await auth.principal_of_session(session) == ann.principal()
    await manage.revoke(issued.record.id)
    assert await auth.principal_of_session(session) is None
    assert await auth.principal_of_bearer(issued.token.encode(), "10.0.0.1") is None
    again = await manage.issue_token("ann")
    session = await auth.login(again.token.encode(), "10.0.0.1")
    assert session is not None
    await manage.set_disabled("ann")
    assert await auth.principal_of_session(session) is None
    assert await auth.login(again.token.encode(), "10.0.0.1") is None
