"""ADMIN_SEES_ALL: an admin reaches only their own conversations, unless it is set."""

from __future__ import annotations

from typing import Any

import pytest

from domain.principals import Role


@pytest.mark.parametrize("sees_all", [False, True])
def test_an_admin_reaches_users_conversations_only_with_admin_sees_all(make_client: Any, sees_all: bool) -> None:
    client = make_client(ADMIN_SEES_ALL=str(sees_all).lower())
    users = client.app.state.services.users()
    headers = {}
    for name, role in (("ann", Role.USER), ("root", Role.ADMIN)):
        user = client.portal.call(users.add, name, role)
        headers[name] = {"Authorization": f"Bearer {client.portal.call(users.issue_token, user.id, '').token}"}
    cid = client.post("/api/chat", json={"message": "ann's"}, headers=headers["ann"]).json()["conversation"]
    seen = client.get(f"/api/conversations/{cid}", headers=headers["root"])
    listed = cid in client.get("/api/conversations", headers=headers["root"]).text
    assert (seen.status_code, listed) == ((200, True) if sees_all else (404, False))
    assert client.get("/metrics", headers=headers["root"]).status_code == 200  # admins read the metrics
    assert client.get("/metrics", headers=headers["ann"]).status_code == 403
