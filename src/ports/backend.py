"""Backend: one storage (SQLite, PostgreSQL, memory) as one declared thing. Everything
Sophos keeps durably goes through a backend's parts, so adding a storage means writing one
class that provides all of them (adapters/<name>/backend.py) and passing the contract
suites (tests/contracts/) with it."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ports.approvals import ApprovalStore
from ports.assistants import AssistantStore
from ports.audit import AuditLog
from ports.checkpoints import CheckpointPort
from ports.events import RunEventLog
from ports.journal import ToolJournal
from ports.knowledge import KnowledgeStore
from ports.presets import PresetStore
from ports.queue import MessageQueue
from ports.runs import RunRepository
from ports.saver import SaverPort
from ports.search import SearchIndex
from ports.sessions import SessionStore
from ports.signals import RunSignals
from ports.storage import StoragePort
from ports.store import StorePort
from ports.traces import SpanStore
from ports.usage import UsageStore
from ports.users import UserStore
from ports.webhooks import WebhookOutbox


class RunStore(RunRepository, RunEventLog, RunSignals, ToolJournal, ApprovalStore, MessageQueue, WebhookOutbox, Protocol):
    """The run ports on one store: an outcome, its terminal event, its journal entries and
    the start of the next queued message share the store's transactions."""


@dataclass(frozen=True)
class Health:
    """What a backend says about itself, for readiness probes, `doctor` and start-up.

    `problem`: why it cannot be used now (unreachable, cannot be opened or migrated), None
    when it can. `integrity`: damage found in the stored data (a damaged or replaced file),
    None when sound or when the backend has no such check. `fix`: what a person can do
    about whichever of the two is set."""

    where: str  # the database for people: a file, or a URL without its password
    reachable: bool
    writable: bool
    schema_version: int | None = None
    problem: str | None = None
    integrity: str | None = None
    fix: str = ""

    @property
    def ok(self) -> bool:
        return self.problem is None and self.integrity is None

    @property
    def detail(self) -> str:
        """One line for a person: where and which schema, or what is wrong."""
        if self.integrity is not None:
            return self.integrity
        if self.problem is not None:
            return f"{self.where}: {self.problem}"
        return f"{self.where} (schema v{self.schema_version})" if self.schema_version is not None else self.where


class Backend(Protocol):
    """One storage's parts, each built on first use (a command that lists conversations
    never loads the checkpoint saver) and closed by `aclose`.

    The saver, the search index and the maintenance see the same data as the run store:
    a conversation deleted through `runs()` is gone from the others too."""

    name: str  # the STORAGE_BACKEND value that selects it

    @abstractmethod
    def runs(self) -> RunStore:
        """Conversations, runs, their events, signals, the tool journal and approvals.
        Opening may migrate the schema; raises StorageFailure when it cannot."""

    @abstractmethod
    def saver(self) -> SaverPort:
        """The checkpoint saver the agent engine writes threads with."""

    @abstractmethod
    def maintenance(self) -> StoragePort:
        """Sizes, retention and compaction (`sophos db`)."""

    @abstractmethod
    def search(self, threads: Callable[[], CheckpointPort]) -> SearchIndex:
        """The message search. `threads` reads threads as the engine does, for a backend
        whose index reads them at query time; a backend with its own index ignores it."""

    @abstractmethod
    def sessions(self) -> SessionStore:
        """The page's login sessions, in the same database (shared by every process on it)."""

    @abstractmethod
    def users(self) -> UserStore:
        """The users and their API tokens, in the same database (shared by every process on it)."""

    @abstractmethod
    def presets(self) -> PresetStore:
        """Each user's saved chat settings, in the same database (shared by every process on it)."""

    @abstractmethod
    def usage(self) -> UsageStore:
        """Tokens and seconds per user, model and day, in the same database."""

    @abstractmethod
    def audit(self) -> AuditLog:
        """The audit log, in the same database (shared by every process on it)."""

    @abstractmethod
    def store(self) -> StorePort:
        """The long-term store (items under each user's namespaces), in the same database
        (shared by every process on it)."""

    @abstractmethod
    def knowledge(self) -> KnowledgeStore:
        """Each user's document collections and their full-text index, in the same database
        (shared by every process on it)."""

    @abstractmethod
    def traces(self) -> SpanStore:
        """The trace spans recorded with the runs' steps, in the same database (shared by
        every process on it: any of them ships them)."""

    @abstractmethod
    def assistants(self) -> AssistantStore:
        """The hosted graphs' assistants and their versions, in the same database (shared by
        every process on it)."""

    @abstractmethod
    async def health(self, integrity: bool = False) -> Health:
        """Whether the database is reachable and writable, and its schema version. Opens
        (and migrates) it when it is not open yet; never raises for a storage failure,
        reports it. With `integrity`, also checks the stored data whole where the backend
        has such a check (it may read every page: for start-up and `doctor`)."""

    @abstractmethod
    async def aclose(self) -> None:
        """Close every part that was opened; idempotent."""
