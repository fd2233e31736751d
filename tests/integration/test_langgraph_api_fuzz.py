"""Fuzz every route of the LangGraph API in process: bodies built from the fields the routes
know with any JSON values (hostile Unicode, deep nesting, wrong types), hostile path and
query parameters and Last-Event-ID. Whatever is sent: never a 5xx, and a 4xx has the JSON
error envelope."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.routing import Route
from starlette.testclient import TestClient

from entrypoints.container import close_container, create_container
from entrypoints.lgapi.app import ROUTES, create_lgapi_app
from entrypoints.lgapi.inputs import RUN_FIELDS
from tests.support.app import app_env

FIELDS = sorted(
    RUN_FIELDS
    | {
        "thread_id",
        "metadata",
        "if_exists",
        "supersteps",
        "ttl",
        "graph_id",
        "values",
        "ids",
        "status",
        "limit",
        "offset",
        "sort_by",
        "sort_order",
        "select",
        "extract",
        "before",
        "name",
        "messages",
        "type",
        "content",
        "resume",
        "decisions",
        "schedule",
        "timezone",
        "end_time",
        "enabled",
        "webhook",
        "on_run_completed",
    }
)
HOSTILE = st.text(st.characters(categories=["Cs", "Cf", "Cc", "Co", "Zl", "Mn", "Lo", "Nd"]), max_size=20) | st.sampled_from(
    [
        "\ud800",
        "\u202egnp.exe",
        "\x00",
        "../../etc/passwd",
        "9" * 40,
        "-1",
        "1@zzzzzzzz",
        "7@00000000",
        "agent",
        "human",
        "tool",
        "values",
        "messages-tuple",
        "approve",
        "edit",
        "create",
        "do_nothing",
        "reject",
        "interrupt",
    ]
)
SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | HOSTILE
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(FIELDS) | HOSTILE, inner, max_size=4),
    max_leaves=12,
)
# values of the wrong type or shape, which a field's check must refuse
WRONG = st.sampled_from([None, True, 0, -1, 2**70, 1.5, "", "x", [], [None], [[]], {}, {"a": None}, {"checkpoint_id": []}])
HUMAN = {"messages": [{"type": "human", "content": "hi"}]}
RUN = {"assistant_id": "agent", "input": HUMAN, "stream_mode": ["values", "messages-tuple"]}
# a valid body per route: the fuzz changes one or two of its fields (or adds a known one), so
# a request gets past the first check and reaches the later ones
VALID: dict[str, dict[str, Any]] = {
    "/assistants/search": {"graph_id": "agent", "metadata": {}, "limit": 10, "offset": 0},
    "/assistants/count": {"graph_id": "agent", "metadata": {}},
    "/threads": {"metadata": {"k": "v"}, "if_exists": "do_nothing"},
    "/commands": {"id": 1, "method": "input.respond", "params": {"interrupt_id": "x", "namespace": [], "response": "yes"}},
    "/threads/search": {
        "metadata": {"fuzz": True},
        "status": "idle",
        "limit": 5,
        "offset": 0,
        "sort_by": "updated_at",
        "sort_order": "desc",
        "select": ["thread_id", "values"],
        "ids": [],
    },
    "/threads/count": {"metadata": {"fuzz": True}, "status": "idle"},
    "/history": {"limit": 5, "before": {"configurable": {"checkpoint_id": "x"}}},
    "/state": {"values": {}},
    "/runs": RUN,
    "/runs/stream": RUN,
    "/runs/wait": RUN,
    "/runs/crons": {**RUN, "schedule": "* * * * * *", "timezone": "Europe/Paris", "end_time": "2099-01-01T00:00:00"},
    "/runs/crons/search": {
        "assistant_id": "agent",
        "enabled": True,
        "limit": 5,
        "sort_by": "next_run_date",
        "select": ["cron_id"],
    },
}


def body_for(path: str) -> st.SearchStrategy[Any]:
    template = next((v for k, v in VALID.items() if path.endswith(k)), {"metadata": {"k": 1}})
    keys = st.sampled_from(sorted(template)) | st.sampled_from(FIELDS) if template else st.sampled_from(FIELDS)
    changes = st.dictionaries(keys, WRONG | JSON, min_size=1, max_size=1) | st.dictionaries(keys, JSON, min_size=2, max_size=2)
    return changes.map(lambda c: {**template, **c}) | st.just(template) | JSON


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, str, str]]:
    env = app_env(tmp_path_factory.mktemp("lgfuzz"), TOOLS_BACKEND="none", MODEL_TIMEOUT="2")
    container = create_container(env)
    app = create_lgapi_app(container.services(), container.settings(), asyncio.Event())
    with TestClient(app, raise_server_exceptions=False) as c:
        tid = c.post("/threads", json={"metadata": {"fuzz": True}}).json()["thread_id"]
        run = c.post(
            f"/threads/{tid}/runs", json={"assistant_id": "agent", "input": {"messages": [{"type": "human", "content": "hi"}]}}
        )
        yield c, tid, run.json()["run_id"]
        c.portal.call(close_container, container)  # type: ignore[union-attr]


def routes() -> list[tuple[str, str]]:
    out = []
    for route in ROUTES:
        if not isinstance(route, Route) or route.path.endswith("/stream/events"):
            # the thread protocol's event stream follows a thread until the client leaves, and its
            # socket: their hostile input is tested in test_thread_protocol.py and unit/test_thread_protocol.py
            continue
        for method in sorted((route.methods or set()) - {"HEAD"}):
            out.append((method, route.path))
    return out


@pytest.mark.parametrize(("method", "path"), routes())
def test_no_request_makes_the_langgraph_api_fail(client: tuple[TestClient, str, str], method: str, path: str) -> None:
    c, tid, rid = client
    params = {
        "thread_id": st.sampled_from([tid, str(uuid.uuid4()), "not-a-uuid"]),
        "run_id": st.sampled_from([rid, str(uuid.uuid4())]),
        "assistant_id": st.sampled_from(["agent", str(uuid.uuid4())]) | HOSTILE,
        "checkpoint_id": HOSTILE,
        "cron_id": st.sampled_from([str(uuid.uuid4())]) | HOSTILE,
    }
    names = re.findall(r"{(\w+)(?::\w+)?}", path)

    @given(
        values=st.fixed_dictionaries({n: params[n] for n in names}),
        body=body_for(path),
        query=st.dictionaries(
            st.sampled_from(["limit", "offset", "status", "stream_mode", "wait", "action"]), HOSTILE, max_size=3
        ),
        last=st.none() | HOSTILE,
    )
    @settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def run(values: dict[str, str], body: Any, query: dict[str, str], last: str | None) -> None:
        url = path
        for name, value in values.items():
            segment = quote(value.encode("utf-8", "surrogatepass").decode("utf-8", "replace"), safe="") or "x"
            url = re.sub(r"{" + name + r"(?::\w+)?}", lambda _, s=segment: s, url)
        headers = {"Content-Type": "application/json"}
        if last is not None:
            headers["Last-Event-ID"] = re.sub(r"[\r\n\x00]", "", last.encode("utf-8", "surrogatepass").decode("latin-1"))
        query = {k: v.encode("utf-8", "replace").decode("utf-8", "replace") for k, v in query.items()}
        content = json.dumps(body).encode() if method != "GET" else None
        try:
            response = c.request(method, url, content=content, params=query, headers=headers)
        except UnicodeEncodeError:  # a header no client can send
            return
        assert response.status_code < 500 or response.status_code == 501, (method, url, body, response.text[:300])
        if response.status_code >= 400:
            assert response.json()["error"]["code"], response.text[:300]

    run()
