"""A `langgraph.json` at start-up (issue 44): `sophos serve` imports its graphs before it
listens, and a graph that fails stops it with one line naming the file and the error;
`sophos graphs` lists them (id, kind, source) from LANGGRAPH_JSON or --langgraph-json."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from tests.support.app import app_env
from tests.support.cli import sophos
from tests.support.server import LiveServer

GRAPH = """
from typing_extensions import TypedDict
from langgraph.graph import START, StateGraph


class State(TypedDict):
    text: str


builder = StateGraph(State)
builder.add_node("echo", lambda state: {"text": state["text"] + " echoed"})
builder.add_edge(START, "echo")
graph = builder.compile()


async def make_graph(config, runtime: "ServerRuntime"):
    return graph
"""


def graphs_file(tmp_path: Path, graph_source: str = GRAPH) -> Path:
    (tmp_path / "graphs").mkdir()
    (tmp_path / "graphs" / "agent.py").write_text(graph_source)
    config = tmp_path / "langgraph.json"
    config.write_text(
        json.dumps(
            {
                "dependencies": ["./graphs"],
                "graphs": {
                    "echo": "./graphs/agent.py:graph",
                    "echo_builder": "./graphs/agent.py:builder",
                    "echo_factory": "./graphs/agent.py:make_graph",
                },
            }
        )
    )
    return config


def test_a_graph_that_fails_to_import_stops_serve_with_one_line_naming_the_file_and_the_error(tmp_path: Path) -> None:
    config = graphs_file(tmp_path, GRAPH + "\nraise RuntimeError('OPENAI_API_KEY is not set')\n")
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    result = sophos(env, tmp_path, "serve", "--langgraph-json", str(config), timeout=60)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: BAD_GRAPH: {config}: graph 'echo' (./graphs/agent.py:graph): RuntimeError: OPENAI_API_KEY is not set"
    ]
    assert "listening" not in result.stdout


def test_serve_loads_the_graphs_of_langgraph_json_before_it_listens(tmp_path: Path) -> None:
    config = graphs_file(tmp_path)
    server = LiveServer(
        app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", LANGGRAPH_JSON=str(config)), tmp_path
    ).start()
    try:
        lines = server.log.read_text().splitlines()
    finally:
        server.stop()
    loaded = f"Graphs loaded from {config}: echo, echo_builder, echo_factory"
    assert lines.index(loaded) < next(i for i, line in enumerate(lines) if "listening" in line)


def test_sophos_graphs_lists_id_kind_and_source_from_the_setting_or_the_option(tmp_path: Path) -> None:
    config = graphs_file(tmp_path)
    env = app_env(tmp_path, LANGGRAPH_JSON=str(config))
    listed = sophos(env, tmp_path, "graphs")
    assert listed.returncode == 0, listed.stderr
    assistants = {
        g: str(uuid.uuid5(uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430cd"), g)) for g in ("echo", "echo_builder", "echo_factory")
    }
    assert [line.split() for line in listed.stdout.splitlines()] == [
        ["echo", assistants["echo"], "compiled", "./graphs/agent.py:graph"],
        ["echo_builder", assistants["echo_builder"], "state", "graph", "./graphs/agent.py:builder"],
        ["echo_factory", assistants["echo_factory"], "factory(config,", "runtime)", "./graphs/agent.py:make_graph"],
    ]
    as_json = json.loads(sophos(app_env(tmp_path), tmp_path, "graphs", "--json", "--langgraph-json", str(config)).stdout)
    assert as_json["file"] == str(config)
    assert [(g["graph_id"], g["assistant_id"], g["kind"], g["factory_args"]) for g in as_json["graphs"]] == [
        ("echo", assistants["echo"], "compiled", []),
        ("echo_builder", assistants["echo_builder"], "state graph", []),
        ("echo_factory", assistants["echo_factory"], "factory", ["config", "runtime"]),
    ]
    none = sophos(app_env(tmp_path), tmp_path, "graphs")
    assert (none.returncode, none.stdout) == (0, "")
    assert "no langgraph.json is configured" in none.stderr
