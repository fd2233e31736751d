"""The shape of src/ as rules a test can hold: no surface nobody uses (a name defined and
never reached from running code is a promise nobody keeps, and tests that exercise it only
keep it alive)."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _sources(root: Path = SRC) -> list[Path]:
    """The project's Python files under `root`: not the page's installed npm packages (some
    ship Python scripts of their own)."""
    return sorted(p for p in root.rglob("*.py") if "node_modules" not in p.parts)


# decorators that hand nothing to anyone: the function they wrap is still used only if named
NEUTRAL = {
    "dataclass",
    "property",
    "staticmethod",
    "classmethod",
    "abstractmethod",
    "contextmanager",
    "asynccontextmanager",
    "cached_property",
    "overload",
    "cache",
    "lru_cache",
    "final",
    "runtime_checkable",
}
# used by tests only, and meant so
TEST_ONLY = {
    # in-memory adapters: real ones, for tests and trying things out (docs/architecture.md)
    "adapters/memory/metrics.py:InMemoryMetrics",
    "adapters/memory/model.py:ScriptedModel",
    "adapters/system/prompt.py:FixedPrompt",
    # the hub's local follower, which tests read a run's buffer with; services/hub.py is the
    # run kernel's (issue 43, part 1), which decides whether following keeps it
    "services/hub.py:ActiveRun.subscribe",
    # run by scripts/settings-table, which writes the docs' table from the declarations
    "entrypoints/settings_rules.py:docs_table",
}


def _names(nodes: Iterable[ast.AST]) -> set[str]:
    """Every name the nodes reach: variables, attributes, imports, and strings that are
    identifiers (getattr, __all__)."""
    out: set[str] = set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                out.add(n.id)
            elif isinstance(n, ast.Attribute):
                out.add(n.attr)
            elif isinstance(n, ast.alias):
                out.add(n.name.rpartition(".")[2])
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier():
                out.add(n.value)
    return out


def _registers(decorators: Sequence[ast.expr]) -> bool:
    """A decorator that hands the function to someone (click, a router) uses it."""
    for d in decorators:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name not in NEUTRAL:
            return True
    return False


class _Defs:
    """The classes and functions of src/, each with what it names, and the roots: what
    runs at import (module and class bodies, decorators, defaults, bases)."""

    def __init__(self, trees: dict[str, ast.Module]) -> None:
        self.ours = {n.name for t in trees.values() for n in ast.walk(t) if isinstance(n, ast.ClassDef)}
        self.defs: dict[str, tuple[str, bool]] = {}  # "path:Qual.name" -> (name, used whatever names it)
        self.inner: dict[str, set[str]] = defaultdict(set)
        self.roots: set[str] = set()
        for path, tree in trees.items():
            self._visit(tree.body, f"{path}:", False)

    def _visit(self, body: Sequence[ast.stmt], prefix: str, foreign: bool) -> None:
        for st in body:
            if isinstance(st, ast.ClassDef):
                self.defs[prefix + st.name] = (st.name, _registers(st.decorator_list))
                self.roots |= _names([*st.bases, *st.keywords, *st.decorator_list])
                # a method of a library's subclass is called by the library
                bases = _names(st.bases) - self.ours - {"Protocol", "Generic", "object", "ABC"}
                self._visit(st.body, f"{prefix}{st.name}.", bool(bases))
            elif isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef):
                used = _registers(st.decorator_list) or st.name.startswith("__") or foreign
                self.defs[prefix + st.name] = (st.name, used)
                defaults = [d for d in [*st.args.defaults, *st.args.kw_defaults] if d is not None]
                self.roots |= _names([*st.decorator_list, *defaults])
                self.inner[prefix + st.name] = _names(st.body)
            else:
                self.roots |= _names([st])

    def unused(self) -> set[str]:
        named, live = set(self.roots), set()
        while True:
            new = {k for k, (name, used) in self.defs.items() if k not in live and (used or name in named)}
            if not new:
                return set(self.defs) - live
            live |= new
            for key in new:
                named |= self.inner[key]


def test_every_function_and_class_in_src_is_reached_from_running_code() -> None:
    trees = {p.relative_to(SRC).as_posix(): ast.parse(p.read_text(encoding="utf-8")) for p in _sources()}
    unused = _Defs(trees).unused()
    assert sorted(unused - TEST_ONLY) == []
    assert sorted(TEST_ONLY - unused) == []  # an entry that is used now goes


def test_the_edges_pass_the_container_typed() -> None:
    # a container typed Any switches the type checker off exactly where the layers meet
    untyped = []
    for path in _sources(SRC / "entrypoints"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            annotated = [(a.arg, a.annotation) for a in node.args.args] if isinstance(node, ast.FunctionDef) else []
            if isinstance(node, ast.FunctionDef) and node.name == "container":
                annotated.append((node.name, node.returns))
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute):
                annotated.append((node.target.attr, node.annotation))
            untyped += [
                f"{path.relative_to(SRC)}:{name}"
                for name, ann in annotated
                if name.lstrip("_") == "container" and (ann is None or "Any" in ast.unparse(ann))
            ]
    assert untyped == []


CAMEL = re.compile(r"^[a-z]+(?:[A-Z][a-z0-9]*)+$")


def test_the_domain_serialises_nothing() -> None:
    # the API's JSON is built at the edge (entrypoints/dto.py) and stored formats have their
    # own modules: a camelCase key or a to_dto in the domain is a wire shape in the wrong place
    found = []
    for path in _sources(SRC / "domain"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and CAMEL.match(node.value):
                found.append(f"{path.relative_to(SRC)}:{node.lineno} {node.value!r}")
            elif isinstance(node, ast.keyword) and node.arg and CAMEL.match(node.arg):
                found.append(f"{path.relative_to(SRC)}:{node.value.lineno} {node.arg}=")
            elif isinstance(node, ast.FunctionDef) and "to_dto" in node.name:
                found.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}()")
    assert found == []


FUNCTION_LINES = 60
MODULE_LINES = 450


def test_no_function_is_over_60_lines_nor_a_module_over_450() -> None:
    # ruff's C901 and PLR0915 bound complexity and statements (pyproject.toml); lines it cannot
    long_functions, long_modules = set(), set()
    for path in _sources():
        name, text = path.relative_to(SRC).as_posix(), path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MODULE_LINES:
            long_modules.add(name)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                if node.end_lineno - node.lineno + 1 > FUNCTION_LINES:
                    long_functions.add(f"{name}:{node.name}")
    assert (sorted(long_functions), sorted(long_modules)) == ([], [])  # no exception: split it where the names differ


def test_the_container_loads_without_pydantic_settings_and_leaves_it_importable() -> None:
    # entrypoints/di.py: dependency-injector's optional pydantic-settings import is ~170 ms of a
    # read command's start; hidden for that import alone, never for the MCP client after it
    import subprocess
    import sys

    code = (
        "import sys; import entrypoints.container; "
        "assert 'pydantic_settings' not in sys.modules, 'imported by the container'; "
        "import pydantic_settings; print(pydantic_settings.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(SRC)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pydantic_settings"
