"""Graphs of one's own from a `langgraph.json` (issue 44): the file read as langgraph-cli
writes it, each kind of graph imported and told apart, a factory called with the config and/or
langgraph-sdk's ServerRuntime as langgraph-api calls it, `dependencies` on the import path,
`env` set before the graphs import, and anything broken one line naming the file and the
error."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph_sdk.runtime import _ExecutionRuntime, _ReadRuntime

from adapters.graphs.catalog import LangGraphJsonCatalog
from domain.graphs import GraphKind, GraphLoadFailed, GraphNotFound, parse_graphs_config

ECHO = """
from typing_extensions import TypedDict
from langgraph.graph import START, StateGraph


class State(TypedDict, total=False):
    text: str
    seen: str


def echo(state: State) -> State:
    return {"text": state.get("text", "") + " echoed"}


builder = StateGraph(State)
builder.add_node("echo", echo)
builder.add_edge(START, "echo")
graph = builder.compile()
"""


@pytest.fixture(autouse=True)
def _restore_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader sets env and appends to sys.path, as a server does once: undone per test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(os, "environ", dict(os.environ))


def project(tmp_path: Path, graphs: dict[str, Any], files: dict[str, str], **extra: Any) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    config = tmp_path / "langgraph.json"
    config.write_text(json.dumps({"graphs": graphs, **extra}))
    return config


def failure(config: Path) -> str:
    with pytest.raises(GraphLoadFailed) as caught:
        LangGraphJsonCatalog.load(str(config))
    message = caught.value.message
    assert message.startswith(f"{config}: ") and "\n" not in message, message
    assert caught.value.code == "BAD_GRAPH"
    return message


async def run(catalog: LangGraphJsonCatalog, graph_id: str, values: dict[str, Any], **kw: Any) -> dict[str, Any]:
    async with catalog.graph(
        graph_id, access="threads.create_run", store=InMemoryStore(), checkpointer=InMemorySaver(), **kw
    ) as graph:
        out: dict[str, Any] = await graph.ainvoke(values, {"configurable": {"thread_id": str(uuid.uuid4())}})
        return out


async def test_a_compiled_graph_a_state_graph_and_a_factory_are_each_loaded_as_their_kind(tmp_path: Path) -> None:
    factory = ECHO + "\ndef make_graph(config):\n    return builder\n"
    config = project(
        tmp_path,
        {
            "compiled": "./agent.py:graph",
            "builder": "./agent.py:builder",
            "factory": {"path": "./agent.py:make_graph", "description": "made per run"},
        },
        {"agent.py": factory},
    )
    catalog = LangGraphJsonCatalog.load(str(config))
    assert catalog.source == str(config)
    assert [(g.graph_id, g.kind, g.source) for g in catalog.graphs()] == [
        ("compiled", GraphKind.COMPILED, "./agent.py:graph"),
        ("builder", GraphKind.STATE_GRAPH, "./agent.py:builder"),
        ("factory", GraphKind.FACTORY, "./agent.py:make_graph"),
    ]
    assert catalog.get("factory").kind_text == "factory(config)"
    assert catalog.get("factory").description == "made per run"
    for graph_id in ("compiled", "builder", "factory"):  # each runs, on the server's checkpointer
        assert (await run(catalog, graph_id, {"text": "hi"}))["text"] == "hi echoed"


async def test_a_factory_of_config_and_runtime_gets_langgraph_sdk_s_server_runtime_for_the_access(tmp_path: Path) -> None:
    # the langgraph-sdk suite's factory_agent: async, both parameters, ServerRuntime imported only for typing
    source = (
        ECHO
        + """
from typing import TYPE_CHECKING
from langchain_core.runnables import RunnableConfig
if TYPE_CHECKING:
    from langgraph_sdk.runtime import ServerRuntime

CALLS = []


async def make_graph(config: RunnableConfig, runtime: "ServerRuntime"):
    CALLS.append((config, runtime))
    return graph
"""
    )
    config = project(tmp_path, {"factory": "./factory.py:make_graph"}, {"factory.py": source})
    catalog = LangGraphJsonCatalog.load(str(config))
    assert catalog.get("factory").factory_args == ("config", "runtime")
    store = InMemoryStore()
    async with catalog.graph(
        "factory", access="threads.create_run", store=store, config={"configurable": {"k": 1}}, context={"user": "u1"}
    ) as graph:
        assert graph.store is store
    async with catalog.graph("factory", access="threads.read", store=store):
        pass
    calls = sys.modules[next(m for m in sys.modules if m.startswith("_sophos_graph_factory_"))].CALLS
    (run_config, execution), (read_config, read) = calls
    assert run_config["configurable"] == {"k": 1} and read_config["configurable"] == {}
    assert isinstance(execution, _ExecutionRuntime) and execution.access_context == "threads.create_run"
    assert execution.store is store and execution.context == {"user": "u1"}
    assert isinstance(read, _ReadRuntime) and read.execution_runtime is None


async def test_a_factory_may_take_the_runtime_alone_or_nothing_and_be_a_context_manager(tmp_path: Path) -> None:
    source = (
        ECHO
        + """
import contextlib
from langgraph_sdk.runtime import ServerRuntime

EVENTS = []


@contextlib.asynccontextmanager
async def managed(runtime: ServerRuntime):
    EVENTS.append(("enter", runtime.access_context))
    yield builder
    EVENTS.append("exit")


def bare():
    return graph
"""
    )
    config = project(tmp_path, {"managed": "./m.py:managed", "bare": "./m.py:bare"}, {"m.py": source})
    catalog = LangGraphJsonCatalog.load(str(config))
    assert [g.kind_text for g in catalog.graphs()] == ["factory(runtime)", "factory()"]
    assert (await run(catalog, "managed", {"text": "a"}))["text"] == "a echoed"
    assert (await run(catalog, "bare", {"text": "b"}))["text"] == "b echoed"
    events = sys.modules[next(m for m in sys.modules if m.startswith("_sophos_graph_m_"))].EVENTS
    assert events == [("enter", "threads.create_run"), "exit"]  # held for the use, then closed


def test_local_dependencies_go_on_the_import_path_and_a_module_spec_is_imported_from_there(tmp_path: Path) -> None:
    package = f"pkg_{uuid.uuid4().hex}"
    files = {
        f"src/{package}/__init__.py": "",
        f"src/{package}/helpers.py": "SUFFIX = ' helped'\n",
        f"src/{package}/agent.py": ECHO,
        "graphs/uses_helper.py": ECHO + f"from {package}.helpers import SUFFIX\n",
    }
    config = project(
        tmp_path,
        {"by_file": "./graphs/uses_helper.py:graph", "by_module": f"{package}.agent:graph"},
        files,
        dependencies=["./src", "."],
    )
    catalog = LangGraphJsonCatalog.load(str(config))
    assert [g.kind for g in catalog.graphs()] == [GraphKind.COMPILED, GraphKind.COMPILED]
    assert sys.path[-2:] == [str(tmp_path), str(tmp_path / "src")]  # after the server's own, never before


def test_env_is_set_before_the_graphs_import_from_a_mapping_or_a_dotenv_file(tmp_path: Path) -> None:
    name = f"SOPHOS_TEST_{uuid.uuid4().hex[:8].upper()}"
    reads = ECHO + f"import os\nSEEN = os.environ['{name}']\n"
    config = project(tmp_path, {"g": "./g.py:graph"}, {"g.py": reads}, env={name: "from the mapping"})
    LangGraphJsonCatalog.load(str(config))
    assert os.environ[name] == "from the mapping"

    other = tmp_path / "other"
    other.mkdir()
    config = project(other, {"g": "./g.py:graph"}, {"g.py": reads, ".env": f"# comment\n{name}='from the file'\n"}, env=".env")
    LangGraphJsonCatalog.load(str(config))
    assert os.environ[name] == "from the file"


def test_what_sophos_does_its_own_way_and_missing_packages_are_noticed_not_fatal(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        {"g": "./g.py:graph"},
        {"g.py": ECHO},
        dependencies=[".", "langgraph", f"no-such-package-{uuid.uuid4().hex[:6]}"],
        store={"index": {}},
    )
    notices = LangGraphJsonCatalog.load(str(config)).notices()
    assert len(notices) == 2
    assert "no-such-package-" in notices[0] and "not installed" in notices[0]
    assert "`store` is not applied" in notices[1]


def test_an_unknown_graph_id_is_graph_not_found(tmp_path: Path) -> None:
    catalog = LangGraphJsonCatalog.load(str(project(tmp_path, {"g": "./g.py:graph"}, {"g.py": ECHO})))
    with pytest.raises(GraphNotFound):
        catalog.get("nope")
    assert LangGraphJsonCatalog.empty().graphs() == () and LangGraphJsonCatalog.empty().source is None


@pytest.mark.parametrize(
    ("graphs", "files", "extra", "says"),
    [
        ({"g": "./g.py:graph"}, {"g.py": "def broken(:\n"}, {}, "graph 'g' (./g.py:graph): SyntaxError: "),
        ({"g": "./g.py:graph"}, {"g.py": "raise RuntimeError('no key')\n"}, {}, "graph 'g' (./g.py:graph): RuntimeError: no key"),
        ({"g": "./g.py:graph"}, {"g.py": "import sys\nsys.exit(3)\n"}, {}, "SystemExit: 3"),
        (
            {"g": "./g.py:graph"},
            {"g.py": "import no_such_module_here\n"},
            {},
            "ModuleNotFoundError: No module named 'no_such_module_here' (install the package",
        ),
        ({"g": "./missing.py:graph"}, {}, {}, "graph 'g' (./missing.py:graph): file "),
        ({"g": "./g.py:grahp"}, {"g.py": ECHO}, {}, "has no attribute 'grahp' (its graphs: builder, graph)"),
        (
            {"g": "./g.py:State"},
            {"g.py": ECHO + "State = 7\n"},
            {},
            "is of type int, not a compiled graph, a StateGraph or a graph factory",
        ),
        ({"g": "./g.py:f"}, {"g.py": "def f(a, b, c):\n    pass\n"}, {}, "a graph factory takes at most 2 arguments"),
        ({"g": "./g.py:f"}, {"g.py": "def f(a, b):\n    pass\n"}, {}, "must annotate one of them `ServerRuntime`"),
        ({"g": "./g.py"}, {}, {}, "'./g.py' is not `./path.py:attr` or `module:attr`"),
        ({"g": "./agent.ts:graph"}, {}, {}, "is a JavaScript graph"),
        ({}, {}, {}, "`graphs` must map at least one graph id"),
        ({"g": "./g.py:graph"}, {"g.py": ECHO}, {"dependencies": ["./nowhere"]}, "nowhere is not a directory"),
        ({"g": "./g.py:graph"}, {"g.py": ECHO}, {"env": ".env.missing"}, ".env.missing not found"),
        ({"g": "./g.py:graph"}, {"g.py": ECHO}, {"env": {"A": 1}}, "`env`: 'A' must be a variable name with a string value"),
    ],
)
def test_a_broken_file_or_graph_is_one_line_naming_the_file_and_the_error(
    tmp_path: Path,
    graphs: dict[str, Any],
    files: dict[str, str],
    extra: dict[str, Any],
    says: str,
) -> None:
    assert says in failure(project(tmp_path, graphs, files, **extra))


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"{not json", "not valid JSON"),
        (b"[]", "must be a JSON object"),
        (b"\xff\xfe", "not UTF-8 text"),
        (b" " * 1_048_577, "not a langgraph.json"),
    ],
)
def test_a_file_that_is_not_a_langgraph_json_is_one_line(tmp_path: Path, content: bytes, says: str) -> None:
    config = tmp_path / "langgraph.json"
    config.write_bytes(content)
    assert says in failure(config)


def test_a_missing_file_is_one_line_naming_it(tmp_path: Path) -> None:
    assert "No such file or directory" in failure(tmp_path / "nope.json")


def test_the_file_is_read_relative_to_its_directory_as_plain_values() -> None:
    config = parse_graphs_config(
        json.dumps(
            {
                "graphs": {"a": "./g/../graphs/a.py:graph", "b": "pkg.mod:factory.make", "c": {"path": "/abs/c.py:g"}},
                "dependencies": [".", "../shared", "langchain[openai]>=1"],
                "env": "conf/.env",
                "auth": {"path": "x"},
                "python_version": "3.12",
            }
        ),
        "/srv/app/langgraph.json",
    )
    assert [(s.graph_id, s.path, s.module, s.attr) for s in config.graphs] == [
        ("a", "/srv/app/graphs/a.py", None, "graph"),
        ("b", None, "pkg.mod", "factory.make"),
        ("c", "/abs/c.py", None, "g"),
    ]
    assert config.import_paths == ("/srv/app", "/srv/shared")
    assert config.packages == ("langchain[openai]>=1",)
    assert config.env_file == "/srv/app/conf/.env"
    assert config.not_applied == ("auth",)
