"""API_TOKEN: bearer tokens for API clients, a login cookie for the page, both refused
cross-site."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from tests.integration.test_http_contract import error_of, events, start

TOKEN = "s3cret-token"
COOKIE = "sophos_session_8000"  # PORT's default: the name carries the port


def set_cookie_attributes(response: Any) -> set[str]:
    header = response.headers["set-cookie"]
    return {part.strip().lower().split("=")[0] for part in header.split(";")[1:]}


def test_the_page_logs_in_once_and_its_cookie_authenticates_reads_writes_and_the_stream(make_client: Any) -> None:
    client: TestClient = make_client(API_TOKEN=TOKEN)
    assert client.get("/api/session").json() == {"required": True, "authenticated": False}
    assert error_of(client.get("/api/conversations"))[:2] == (401, "UNAUTHORIZED")
    assert error_of(client.post("/api/session", json={"token": "wrong"}))[:2] == (401, "UNAUTHORIZED")
    assert error_of(client.post("/api/session", json={}))[:2] == (400, "BAD_REQUEST")
    assert COOKIE not in client.cookies

    login = client.post("/api/session", json={"token": TOKEN}, headers={"Origin": "http://testserver"})
    admin = {"name": "admin", "role": "admin"}  # API_TOKEN's: the bootstrap admin
    assert login.status_code == 200 and login.json() == {"required": True, "authenticated": True, "user": admin}
    assert {"httponly", "samesite", "path", "max-age"} <= set_cookie_attributes(login)
    assert "samesite=strict" in login.headers["set-cookie"].lower()
    assert "secure" not in set_cookie_attributes(login)  # served over http
    value = client.cookies[COOKIE]
    assert TOKEN not in value  # the cookie is not the token: it cannot be used as a bearer

    assert client.get("/api/session").json() == {"required": True, "authenticated": True, "user": admin}
    assert client.get("/api/conversations").status_code == 200
    cid = start(client, {"message": "hi"})["conversation"]
    assert events(client, cid)[-1][1] == "end"  # the page's EventSource sends only the cookie
    bearer_of_cookie = {"Authorization": f"Bearer {value}"}
    assert make_client(API_TOKEN=TOKEN).get("/api/conversations", headers=bearer_of_cookie).status_code == 401

    assert client.delete("/api/session").status_code == 204
    assert COOKIE not in client.cookies
    assert error_of(client.get(f"/api/conversations/{cid}"))[:2] == (401, "UNAUTHORIZED")


def test_the_cookie_is_secure_over_https_and_a_forged_one_is_refused(make_client: Any) -> None:
    client: TestClient = make_client(API_TOKEN=TOKEN)
    client.base_url = client.base_url.copy_with(scheme="https")
    login = client.post("/api/session", json={"token": TOKEN})
    assert "secure" in set_cookie_attributes(login)
    forged = make_client(API_TOKEN=TOKEN)
    forged.cookies.set(COOKIE, TOKEN)
    assert forged.get("/api/conversations").status_code == 401
    raw = {"Cookie": f"{COOKIE}=".encode() + "é".encode() * 32}
    assert make_client(API_TOKEN=TOKEN).get("/api/conversations", headers=raw).status_code == 401


def test_a_logged_in_browser_still_cannot_be_driven_cross_site(make_client: Any) -> None:
    client: TestClient = make_client(API_TOKEN=TOKEN)
    client.post("/api/session", json={"token": TOKEN})
    for origin in ("http://evil.example", "null"):
        refused = client.post("/api/chat", json={"message": "hi"}, headers={"Origin": origin})
        assert error_of(refused)[:2] == (403, "FORBIDDEN")
        assert error_of(client.delete("/api/session", headers={"Origin": origin}))[:2] == (403, "FORBIDDEN")
    login_csrf = make_client(API_TOKEN=TOKEN).post(
        "/api/session", json={"token": TOKEN}, headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert error_of(login_csrf)[:2] == (403, "FORBIDDEN")


def test_bearer_tokens_work_with_any_case_of_the_scheme(make_client: Any) -> None:
    client: TestClient = make_client(API_TOKEN=TOKEN)
    for header in (f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER  {TOKEN}"):
        assert client.get("/api/conversations", headers={"Authorization": header}).status_code == 200, header
    for header in (f"Basic {TOKEN}", f"Bearer{TOKEN}", TOKEN, "Bearer", ""):
        assert error_of(client.get("/api/conversations", headers={"Authorization": header}))[:2] == (401, "UNAUTHORIZED"), header


def test_a_non_ascii_token_is_compared_as_utf8_bytes_without_a_server_error(make_client: Any) -> None:
    token = "clé-ßecret-✓"
    client: TestClient = make_client(API_TOKEN=token)
    sent = {"Authorization": b"Bearer " + token.encode()}
    assert client.get("/api/conversations", headers=sent).status_code == 200
    for wrong in (b"Bearer cl\xe9-\xdfecret", b"Bearer \xff\xfe", "Bearer clé".encode()):
        assert error_of(client.get("/api/conversations", headers={"Authorization": wrong}))[:2] == (401, "UNAUTHORIZED"), wrong
    assert client.post("/api/session", json={"token": token}).status_code == 200
    assert client.get("/api/conversations").status_code == 200


def test_without_a_token_the_page_needs_no_login(client: TestClient) -> None:
    assert client.get("/api/session").json() == {"required": False, "authenticated": True}
    assert client.post("/api/session", json={"token": "anything"}).json() == {"required": False, "authenticated": True}
