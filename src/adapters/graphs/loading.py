"""Importing one graph of a `langgraph.json` and telling what it is.

A file is imported as a module of its own (named from its path, registered in
`sys.modules` so dataclasses and pickling inside it work), a module by its dotted name. The
attribute is then one of (as langgraph-api tells them apart):
- a compiled graph (any `Pregel`: `StateGraph.compile()`, `@entrypoint`): used as it is;
- a `StateGraph`: compiled once, here;
- a callable: a factory, called for each use with what its parameters ask for (0 to 2:
  a parameter annotated `ServerRuntime` gets the runtime, the other the run's config).
Anything that goes wrong, from a missing file to an exception raised by the module, is a
GraphLoadFailed of one line naming the file, the graph and the error."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, get_args, get_origin

from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph_sdk.runtime import ServerRuntime, _ExecutionRuntime, _ReadRuntime

from domain.graphs import GraphKind, GraphsConfig, GraphSource, HostedGraph

# the runtime's concrete classes, which is what a factory is handed (langgraph_sdk.runtime)
RUNTIME_CLASSES: tuple[type, ...] = (_ExecutionRuntime, _ReadRuntime)
# names a factory's string annotations may use without importing them at run time (under
# TYPE_CHECKING, as the langgraph-sdk suite's factory does)
_ANNOTATION_NAMES: dict[str, Any] = {"ServerRuntime": ServerRuntime}


@dataclass(frozen=True)
class LoadedGraph:
    """A graph as imported: what it is (`hosted`) and the object itself (`value`: a compiled
    graph, or the factory)."""

    hosted: HostedGraph
    value: Any


def load_graph(config: GraphsConfig, source: GraphSource, modules: dict[str, ModuleType]) -> LoadedGraph:
    """Import `source`'s module (once per file: `modules` keeps them by path) and classify its
    attribute; GraphLoadFailed names what failed."""

    def fault(what: str) -> Exception:
        return config.fault(f"graph {source.graph_id!r} ({source.spec}): {what}")

    if source.path is not None and not Path(source.path).is_file():
        raise fault(f"file {source.path} not found")
    try:
        module = _module(source, modules)
    except ModuleNotFoundError as e:
        raise fault(
            f"{type(e).__name__}: {e} (install the package into the server's environment, "
            "or list its directory in `dependencies`)"
        ) from None
    except (Exception, SystemExit) as e:
        raise fault(f"{type(e).__name__}: {e}") from None
    value = _attribute(module, source.attr, fault)
    try:
        kind, args, value = classify(value)
    except (TypeError, ValueError) as e:
        raise fault(str(e)) from None
    except Exception as e:  # a StateGraph that does not compile
        raise fault(f"{type(e).__name__}: {e}") from None
    return LoadedGraph(HostedGraph(source.graph_id, source.spec, kind, args, source.description), value)


def _module(source: GraphSource, modules: dict[str, ModuleType]) -> ModuleType:
    if source.module is not None:
        return importlib.import_module(source.module)
    assert source.path is not None
    if source.path in modules:
        return modules[source.path]
    file = Path(source.path)
    # one name per file, that no other module has: the stem, and a digest of the whole path
    name = f"_sophos_graph_{file.stem}_{hashlib.sha256(source.path.encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ValueError(f"{source.path} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    modules[source.path] = module
    return module


def _attribute(module: ModuleType, attr: str, fault: Callable[[str], Exception]) -> Any:
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            graphs = [k for k, v in vars(module).items() if isinstance(v, Pregel | StateGraph)]
            hint = f" (its graphs: {', '.join(graphs)})" if graphs else ""
            raise fault(f"has no attribute {attr!r}{hint}")
        value = getattr(value, part)
    return value


def classify(value: Any) -> tuple[GraphKind, tuple[str, ...], Any]:
    """The kind of a graph's attribute, a factory's arguments in the order of its parameters
    (`config`, `runtime`), and what to keep (a StateGraph compiled). TypeError for anything
    that is not a graph, ValueError for a factory whose parameters cannot be told apart."""
    if isinstance(value, Pregel):
        return GraphKind.COMPILED, (), value
    if isinstance(value, StateGraph):
        return GraphKind.STATE_GRAPH, (), value.compile()
    if callable(value):
        return GraphKind.FACTORY, factory_args(value), value
    raise TypeError(f"is of type {type(value).__name__}, not a compiled graph, a StateGraph or a graph factory")


def factory_args(fn: Callable[..., Any]) -> tuple[str, ...]:
    """For each parameter of a factory, in order, what it is given: `runtime` for one annotated
    with ServerRuntime (or its concrete classes), `config` for the other. As langgraph-api:
    at most two parameters, and two only when exactly one is the runtime."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        raise ValueError("is a callable whose parameters cannot be read") from None
    try:
        hints = typing.get_type_hints(fn, localns=_ANNOTATION_NAMES)
    except Exception:  # an annotation that names what the module never imported
        hints = {}
    runtime = [_is_runtime(hints.get(p.name, p.annotation)) for p in params]
    if len(params) > 2:
        raise ValueError(f"a graph factory takes at most 2 arguments (config, runtime), this one {len(params)}")
    if len(params) == 2 and sum(runtime) != 1:
        raise ValueError(
            "a graph factory of 2 arguments must annotate one of them `ServerRuntime` "
            "(langgraph_sdk.runtime); the other is the config"
        )
    return tuple("runtime" if is_runtime else "config" for is_runtime in runtime)


def _is_runtime(annotation: Any) -> bool:
    if annotation is ServerRuntime:
        return True
    if isinstance(annotation, str):  # unresolved: as written
        return annotation.partition("[")[0].strip() in ("ServerRuntime", "langgraph_sdk.runtime.ServerRuntime")
    if isinstance(annotation, type):
        return issubclass(annotation, RUNTIME_CLASSES)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is ServerRuntime:
        return True
    return bool(args) and origin is typing.Annotated and _is_runtime(args[0])
