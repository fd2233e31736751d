"""Fuzz the API against its own OpenAPI document: whatever is sent, never a 5xx."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings

from entrypoints.container import close_container, create_container
from entrypoints.http.app import create_app
from tests.support.app import app_env


def fuzz(operation: Any, tried: dict[str, int], server_errors: list[str]) -> None:
    label = f"{operation.method.upper()} {operation.path}"

    @given(case=operation.as_strategy())
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def run(case: Any) -> None:
        response = case.call()
        tried[label] = tried.get(label, 0) + 1
        if response.status_code >= 500 and label != "GET /api/readyz":  # readyz: 503 = model down
            server_errors.append(f"{label} {case.body!r} {case.query!r} -> {response.status_code} {response.text[:200]}")

    run()


def test_no_input_makes_the_api_answer_with_a_server_error(tmp_path: Path) -> None:
    # no model server: a started run fails fast (MODEL_UNREACHABLE), which is data, not a 5xx
    container = create_container(app_env(tmp_path, "http://127.0.0.1:9", TOOLS_BACKEND="none"))
    app = create_app(container, manage_lifecycle=False)
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", app)
    tried: dict[str, int] = {}
    server_errors: list[str] = []
    try:
        for result in schema.get_all_operations():
            fuzz(result.ok(), tried, server_errors)
    finally:
        asyncio.run(close_container(container))
    assert server_errors == []
    assert len(tried) == 14, tried  # every documented operation was exercised
