"""Fuzz the API against its own OpenAPI document, with valid and invalid values (schemathesis'
positive and negative modes) and hostile Unicode in every field, query parameter, path
parameter and header: whatever is sent, never a 5xx."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from entrypoints.container import close_container, create_container
from entrypoints.http.app import create_app
from tests.support.app import app_env

ID = str(uuid.uuid4())
# lone surrogates, bidi and zero-width controls, NUL and other controls, private use, line
# separators, combining marks, plus values that broke the API once
HOSTILE = st.text(
    st.characters(categories=["Cs", "Cf", "Cc", "Co", "Zl", "Zp", "Mn", "So", "Lo", "Nd"]), max_size=30
) | st.sampled_from(
    [
        "\ud800",
        "\udfff x",
        "\u202egnp.exe",
        "\x00",
        f"{ID}\n",
        f"{ID}%0A",
        "../../etc/passwd",
        "0" * 400,
        f"0001-01-01T00:00:00+01:00~{ID}",
        "MDAwMS0wMS0wMVQwMDowMDowMCswMTowMH4",
        "9" * 40,
        "-1",
        "1@zzzzzzzz",
        "[" * 50,
    ]
)
HEADERS = ["Last-Event-ID", "Origin", "Content-Type", "Accept", "Authorization", "Cookie", "X-Forwarded-Proto"]


def hostile_case(case: Any, value: str, where: int) -> str:
    """Put `value` in one place of the case: a body field, a query or path parameter, or a
    header (when a header can carry it); return where it went."""
    body = case.body if isinstance(case.body, dict) else None
    spots: list[tuple[str, str]] = [("body", k) for k in (body or {})]
    spots += [("query", k) for k in (case.query or {})] + [("path", k) for k in (case.path_parameters or {})]
    spots += [("header", h) for h in HEADERS]
    kind, key = spots[where % len(spots)]
    if kind == "body":
        assert body is not None
        body[key] = value
    elif kind in ("query", "path"):
        # a URL carries UTF-8 bytes: a lone surrogate can only arrive as U+FFFD (or as
        # bytes that are not UTF-8, which the server decodes the same way)
        url_value = value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        (case.query if kind == "query" else case.path_parameters)[key] = url_value
    else:
        try:
            value.encode("latin-1")
        except UnicodeEncodeError:
            value = value.encode("utf-8", "surrogatepass").decode("latin-1")  # the raw bytes, as a client could send
        value = re.sub(r"[\r\n\x00]", "", value).lstrip()  # what an HTTP client can put in a header at all
        case.headers = {**(case.headers or {}), key: value if not value or re.match(r"\S", value) else f"x{value}"}
    return f"{kind} {key}"


def fuzz(operation: Any, mode: GenerationMode, examples: int, tried: dict[str, int], server_errors: list[str]) -> None:
    label = f"{operation.method.upper()} {operation.path}"

    @given(case=operation.as_strategy(mode), value=HOSTILE, where=st.integers(0, 50), hostile=st.booleans())
    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def run(case: Any, value: str, where: int, hostile: bool) -> None:
        spot = hostile_case(case, value, where) if hostile else "-"
        if isinstance(case.body, dict):  # JSON with \\u escapes, so lone surrogates travel as a client sends them
            case.body = json.dumps(case.body).encode()
            case.media_type = "application/json"
        response = case.call()
        tried[label] = tried.get(label, 0) + 1
        if response.status_code >= 500 and not (label == "GET /api/readyz" and response.status_code == 503):
            server_errors.append(
                f"{label} [{mode.value}, {spot}] {case.body!r:.200} {case.query!r} {case.headers!r:.200}"
                f" -> {response.status_code} {response.text[:200]}"
            )

    try:
        run()
    except Unsatisfiable:
        assert mode is GenerationMode.NEGATIVE, label  # nothing to make invalid (no parameters, no body)


@pytest.mark.slow
@pytest.mark.timeout(300)  # ~50 requests an operation: 102 s for 40 operations on this loaded machine, more with each route
def test_no_input_makes_the_api_answer_with_a_server_error(tmp_path: Path) -> None:
    # no model server: a started run fails fast (MODEL_UNREACHABLE), which is data, not a 5xx
    container = create_container(app_env(tmp_path, "http://127.0.0.1:9", TOOLS_BACKEND="none"))
    app = create_app(container, manage_lifecycle=False)
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", app)
    tried: dict[str, int] = {}
    server_errors: list[str] = []
    t0 = time.monotonic()
    try:
        for result in schema.get_all_operations():
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                fuzz(result.ok(), mode, 30, tried, server_errors)
    finally:
        asyncio.run(close_container(container))
    took = time.monotonic() - t0
    assert server_errors == []
    documented = sum(1 for _ in schema.get_all_operations())
    assert documented >= 16 and len(tried) == documented, tried  # every documented operation was exercised
    print(f"\nfuzzed {sum(tried.values())} requests in {took:.1f} s, 0 server errors")


SECRET = "quokkazanzibar"


@pytest.mark.slow
@pytest.mark.timeout(300)  # every route's examples, as the first user's fuzzing: more with each route
def test_a_second_user_fuzzing_gets_no_server_error_and_nothing_of_the_first_users(tmp_path: Path) -> None:
    """Users ann and bob: bob (or nobody) fuzzes every operation, often with ann's
    conversation id in a path, a query or the body; never a 5xx, and no answer holds ann's
    conversation id or words."""
    from starlette.testclient import TestClient

    from domain.principals import Role

    container = create_container(app_env(tmp_path, "http://127.0.0.1:9", TOOLS_BACKEND="none"))
    app = create_app(container, manage_lifecycle=False)
    users = container.services().users()
    tokens: dict[str, str] = {}
    with TestClient(app) as client:
        for name in ("ann", "bob"):
            user = client.portal.call(users.add, name, Role.USER)  # type: ignore[union-attr]
            tokens[name] = client.portal.call(users.issue_token, user.id, "").token  # type: ignore[union-attr]
        started = client.post("/api/chat", json={"message": f"my {SECRET}"}, headers={"Authorization": f"Bearer {tokens['ann']}"})
        assert started.status_code == 200, started.text
        cid = started.json()["conversation"]
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", app, headers={"Authorization": f"Bearer {tokens['bob']}"})
    leaks: list[str] = []
    server_errors: list[str] = []
    tried: dict[str, int] = {}

    def fuzz_as_bob(operation: Any, mode: GenerationMode) -> None:
        label = f"{operation.method.upper()} {operation.path}"

        @given(case=operation.as_strategy(mode), theirs=st.booleans(), credentials=st.sampled_from(["bob", "bob", "none"]))
        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def run(case: Any, theirs: bool, credentials: str) -> None:
            if theirs:
                for where in (case.path_parameters, case.query):
                    for key in ("conversation_id", "conversation"):
                        if where and key in where:
                            where[key] = cid
                if isinstance(case.body, dict) and "conversation" in case.body:
                    case.body["conversation"] = cid
            if isinstance(case.body, dict):
                case.body = json.dumps(case.body).encode()
                case.media_type = "application/json"
            headers = dict(case.headers or {})
            headers.pop("Authorization", None)
            if credentials == "bob":
                headers["Authorization"] = f"Bearer {tokens['bob']}"
            case.headers = headers
            response = case.call()
            tried[label] = tried.get(label, 0) + 1
            if response.status_code >= 500 and not (label == "GET /api/readyz" and response.status_code == 503):
                server_errors.append(f"{label} -> {response.status_code} {response.text[:200]}")
            # an unknown conversation's answer names the id that was sent (the stream's NOT_FOUND
            # event does): ann's id may come back only so, and only to a request that sent it
            echoed = theirs and response.status_code in (200, 404) and b"NOT_FOUND" in response.content
            if SECRET.encode() in response.content or (cid.encode() in response.content and not echoed):
                leaks.append(f"{label} [{credentials}, theirs={theirs}] -> {response.status_code} {response.text[:200]}")

        try:
            run()
        except Unsatisfiable:
            assert mode is GenerationMode.NEGATIVE, label

    try:
        for result in schema.get_all_operations():
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                fuzz_as_bob(result.ok(), mode)
    finally:
        asyncio.run(close_container(container))
    assert server_errors == []
    assert leaks == []
    assert len(tried) == sum(1 for _ in schema.get_all_operations()), tried
