"""A run of a hosted graph (issue 44), as plain values: what starting one takes (`GraphRun`),
what its stream carries (`GraphChunk`, stored in the run event log as a `graph` event, so a
join, a re-join after Last-Event-ID and another process's join read it as they read a
Sophos run's events) and a thread's state as the graph reads it (`GraphState`). Payloads are
JSON values already: the graph runner (ports.graphs.GraphRunner) converts LangGraph's
objects (messages, interrupts) at its boundary, as langgraph-api serialises them."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from domain.errors import ErrorCode, InvalidInput, SophosError
from domain.events import StreamEvent

GRAPH_EVENT = "graph"  # the stream event that carries a hosted graph's chunk: {"mode", "ns", "data"}
# LangGraph's stream modes a hosted run streams (langgraph-api's names: `messages-tuple` is
# LangGraph's `messages`); `events` (astream_events) is accepted and sends nothing
STREAM_MODES = ("values", "updates", "messages-tuple", "messages", "custom", "debug", "tasks", "checkpoints", "events")
# a run started through LangGraph's thread protocol (POST /threads/{id}/commands): its chunks
# are that protocol's events (`method`, `data`, `interrupts`), made by LangGraph itself
PROTOCOL_MODE = "protocol"
THREAD_GRAPH_KEY = "graph_id"  # thread metadata naming the graph the thread's runs run, as langgraph-api stamps it
SOPHOS_GRAPH = "agent"  # Sophos's own agent's graph id on the LangGraph API
MAX_NODES = 256
DURABILITY = ("sync", "async", "exit")  # interrupt_before / interrupt_after entries


class GraphThread(SophosError):
    """Raised when Sophos's own agent is asked to run on, or list, a thread whose runs run a
    hosted graph: its state is the graph's, not a conversation's."""

    code = ErrorCode.GRAPH_THREAD
    default_message = "This thread runs a hosted graph: use the LangGraph API with its assistant"


@dataclass(frozen=True)
class GraphRun:
    """One run of graph `graph_id` on thread `thread_id`: `input` (any JSON; None resumes from
    the thread's last checkpoint) or `command` (`resume`, `update`, `goto`), the run's
    `config` and `context`, the stream modes asked for, the nodes to stop before or after
    (`"*"`: every node), whether subgraphs stream, the checkpoint to run from, and when
    checkpoints are written."""

    graph_id: str
    thread_id: str
    input: Any = None
    command: Mapping[str, Any] | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    context: Any = None
    stream_modes: tuple[str, ...] = ("values",)
    interrupt_before: tuple[str, ...] | str = ()
    interrupt_after: tuple[str, ...] | str = ()
    subgraphs: bool = False
    checkpoint_id: str | None = None
    # LangGraph's durability: "sync" (Sophos's default: a step's checkpoint is committed
    # before the next step begins, so a crash re-runs only the step it cut), "async", "exit"
    durability: str = "sync"
    # the thread goes once the run ends (a thread-less cron's firing, `on_run_completed`
    # delete): kept with the run, so a process that resumes it after a crash deletes it too
    delete_thread: bool = False
    # the assistant the run uses (its config, context and metadata are in the fields above);
    # None: the graph's start-up assistant
    assistant_id: str | None = None
    webhook: str | None = None  # called when the run ends (domain.webhooks), kept with the run

    def __post_init__(self) -> None:
        if self.durability not in DURABILITY:
            raise InvalidInput('durability must be "sync", "async" or "exit"')
        if self.input is not None and self.command is not None:
            raise InvalidInput("A run takes an input or a command, not both")
        if self.command is not None and not set(self.command) & {"resume", "update", "goto"}:
            raise InvalidInput("command must have resume, update or goto")
        for name in ("interrupt_before", "interrupt_after"):
            nodes = getattr(self, name)
            if nodes != "*" and (len(nodes) > MAX_NODES or not all(isinstance(n, str) for n in nodes)):
                raise InvalidInput(f'{name} must be "*" or a list of node names')
        if not set(self.stream_modes) <= {*STREAM_MODES, PROTOCOL_MODE}:
            raise InvalidInput(f"stream_mode must be among {', '.join(STREAM_MODES)}")

    def kept(self) -> dict[str, Any]:
        """What is kept with the run (ports.runs set_run_kwargs) so a resume after a crash
        runs the same graph with the same config, a join streams the run's own modes, and a
        run a crash cut before it wrote anything starts again as it was asked (`start`)."""
        kept = {
            "graph_id": self.graph_id,
            "stream_mode": list(self.stream_modes),
            "config": dict(self.config),
            "context": self.context,
            "subgraphs": self.subgraphs,
            "durability": self.durability,
            **({"delete_thread": True} if self.delete_thread else {}),
            "assistant_id": self.assistant_id,
            "start": {
                "input": self.input,
                "command": dict(self.command) if self.command is not None else None,
                "checkpoint_id": self.checkpoint_id,
                "interrupt_before": _nodes(self.interrupt_before),
                "interrupt_after": _nodes(self.interrupt_after),
            },
        }
        return kept | ({"webhook": self.webhook} if self.webhook is not None else {})

    @classmethod
    def restarted(cls, thread_id: str, kept: Mapping[str, Any]) -> GraphRun:
        """The run that starts a stopped one again as it was asked (its input or command,
        checkpoint and interrupt nodes): for a run a crash cut before anything of it reached
        the thread, whose input a resume from the thread's last checkpoint would lose, as
        langgraph-api runs a run again whose worker died. A run kept before `start` was
        kept resumes (`resumed`)."""
        resumed = cls.resumed(thread_id, kept)
        start = kept.get("start")
        if not isinstance(start, Mapping):
            return resumed
        command = start.get("command")
        return replace(
            resumed,
            input=start.get("input"),
            command=dict(command) if isinstance(command, Mapping) else None,
            checkpoint_id=start.get("checkpoint_id") if isinstance(start.get("checkpoint_id"), str) else None,
            interrupt_before=_kept_nodes(start.get("interrupt_before")),
            interrupt_after=_kept_nodes(start.get("interrupt_after")),
        )

    @classmethod
    def resumed(cls, thread_id: str, kept: Mapping[str, Any]) -> GraphRun:
        """The run that resumes a stopped one (kept: its `kept()`) from the thread's last
        checkpoint: no input, the same graph, config, context and modes."""
        modes = kept.get("stream_mode")
        return cls(
            str(kept["graph_id"]),
            thread_id,
            config=dict(kept.get("config") or {}),
            context=kept.get("context"),
            stream_modes=tuple(modes) if isinstance(modes, list) and modes else ("values",),
            subgraphs=bool(kept.get("subgraphs")),
            durability=str(kept.get("durability") or "sync"),
            delete_thread=kept.get("delete_thread") is True,
            assistant_id=kept.get("assistant_id") if isinstance(kept.get("assistant_id"), str) else None,
            webhook=kept.get("webhook") if isinstance(kept.get("webhook"), str) else None,
        )


def _nodes(nodes: tuple[str, ...] | str) -> list[str] | str:
    return nodes if isinstance(nodes, str) else list(nodes)


def _kept_nodes(nodes: Any) -> tuple[str, ...] | str:
    return "*" if nodes == "*" else tuple(n for n in nodes if isinstance(n, str)) if isinstance(nodes, list) else ()


@dataclass(frozen=True)
class GraphChunk:
    """One chunk of a hosted graph's stream: its mode (or `error`), the subgraph namespace
    it comes from (empty: the graph itself) and its JSON payload."""

    mode: str
    data: Any
    namespace: tuple[str, ...] = ()

    def event(self) -> StreamEvent:
        return StreamEvent(GRAPH_EVENT, {"mode": self.mode, "ns": list(self.namespace), "data": self.data})

    @classmethod
    def of(cls, event: StreamEvent) -> GraphChunk | None:
        """The chunk a stored `graph` event carries; None for any other event."""
        data = event.data
        if event.event != GRAPH_EVENT or not isinstance(data, dict):
            return None
        return cls(str(data.get("mode")), data.get("data"), tuple(str(n) for n in data.get("ns") or ()))

    @property
    def name(self) -> str:
        """The SSE event's name, as langgraph-api says it: `mode`, or `mode|ns` for a subgraph's."""
        return "|".join((self.mode, *self.namespace)) if self.namespace else self.mode


@dataclass(frozen=True)
class GraphState:
    """A thread's state at one checkpoint as its graph reads it (LangGraph's StateSnapshot,
    its parts as JSON): `tasks` as langgraph-api shapes them, `interrupts` those of every task.
    `checkpoint` None: no checkpoint is saved there (an empty thread, an unknown id)."""

    values: Any
    next: tuple[str, ...] = ()
    tasks: tuple[Mapping[str, Any], ...] = ()
    checkpoint: Mapping[str, Any] | None = None
    parent_checkpoint: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] | None = None
    created_at: str | None = None
    interrupts: tuple[Mapping[str, Any], ...] = ()

    @property
    def waiting(self) -> bool:
        """The graph stopped with work left: an `interrupt()` or interrupt_before/after."""
        return bool(self.next) or bool(self.interrupts)


def graph_of_thread(metadata: Mapping[str, Any] | None, hosted: Collection[str]) -> str | None:
    """The hosted graph a thread's runs run, by the metadata the server stamps on it when a
    graph runs there (`graph_id`, services.hosted): any graph but Sophos's own `agent`, served
    or no longer, or `agent` while a hosted graph replaces it (Sophos never stamps its own
    threads); None for a thread of Sophos's agent, whose state is a conversation's."""
    graph = (metadata or {}).get(THREAD_GRAPH_KEY)
    if not isinstance(graph, str) or (graph == SOPHOS_GRAPH and graph not in hosted):
        return None
    return graph
