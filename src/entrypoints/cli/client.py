"""One client for every command: the same operations on this machine's database
(`LocalClient`, the use cases in this process) or on a running server (`HttpClient`,
`--server URL`). A command is written once against `SophosClient`; values come back as
the API's JSON (dicts), so `--json` prints the same thing either way.

Why the local client calls the use cases rather than the in-process Starlette app through
httpx.ASGITransport: that transport collects a response's whole body before returning it
(httpx 0.29), so a run's tokens would arrive only when it ended, and a closed stdout or
Ctrl-C could not stop it; and a run in this process must stop as `interrupted` on SIGTERM
and reclaim runs a crashed CLI left, which the API does not express."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from domain.lifecycle import StopReason
    from entrypoints.cli.output import Printer

Json = dict[str, Any]


class RemoteError(Exception):
    """Raised when a server refuses a request or cannot be reached (code UNREACHABLE)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Stopper:
    """Stops the run being followed when a signal handler asks (handlers cannot await):
    a request made before the run exists applies as soon as it does."""

    def __init__(self) -> None:
        self.reason: StopReason | None = None
        self._stop: Callable[[StopReason], None] | None = None

    @property
    def following(self) -> bool:
        return self._stop is not None

    def __call__(self, reason: StopReason) -> None:
        if self.reason is None:
            self.reason = reason
        if self._stop is not None:
            self._stop(reason)

    def attach(self, stop: Callable[[StopReason], None]) -> None:
        self._stop = stop
        if self.reason is not None:
            stop(self.reason)

    def detach(self) -> None:
        self._stop = None


class SophosClient(Protocol):
    """What the commands do, wherever the conversations live. Failures raise the domain's
    SophosError (local) or RemoteError (server); both carry the API's error code."""

    # runs execute in this process: a SIGTERM must stop them (as `interrupted`); a
    # server's runs are its own, so a client that is killed leaves them running
    in_process: bool

    async def conversations(self, limit: int | None) -> list[Json]:
        """Summaries, most recently updated first (at most `limit`)."""
        ...

    async def find(self, id_prefix: str) -> list[Json]:
        """Summaries of the conversations whose id starts with `id_prefix`, most recently
        updated first (a few: more than one means the prefix is ambiguous)."""
        ...

    async def conversation(self, conversation: str) -> Json:
        """The detail as GET /api/conversations/ID gives it (waiting calls included)."""
        ...

    async def rename(self, conversation: str, title: str) -> Json:
        """The renamed conversation's summary."""
        ...

    async def delete(self, conversation: str) -> None: ...

    async def configure(self, conversation: str, settings: Json) -> Json:
        """Set the conversation's `model` and/or `system` (the keys given; None: the
        server's default) for its next turns, as PATCH /api/conversations/ID does; the
        summary with both. An unknown model is refused (UNKNOWN_MODEL)."""
        ...

    async def models(self) -> Json:
        """`{default, models, error?}` as GET /api/models gives them."""
        ...

    async def switch_branch(self, conversation: str, number: int) -> Json:
        """The detail on its new active branch (without the waiting calls)."""
        ...

    async def export(self, conversation: str, fmt: str) -> str:
        """The transcript (`md`) or the checkpoint history (`jsonl`)."""
        ...

    async def export_file(self, conversation: str | None) -> tuple[str, bytes]:
        """(file name, content): the conversation's full JSON export, or (None) every
        conversation's, as a zip."""
        ...

    async def import_file(self, data: bytes) -> list[Json]:
        """Import a file (a Sophos export, the zip of all, ChatGPT's conversations.json):
        the new conversations' summaries."""
        ...

    async def search(self, query: str, limit: int) -> Json:
        """`{results, nextCursor}` as GET /api/search gives them."""
        ...

    async def cancel(self, conversation: str) -> Json:
        """`{conversation, run, status}`: `running` when its owner has not stopped it yet."""
        ...

    async def allow_rules(self) -> list[Json]:
        """The tools always allowed: `[{tool, since}]`, `since` an ISO-8601 time."""
        ...

    async def revoke_rule(self, tool: str) -> None: ...

    async def schedules(self) -> list[Json]:
        """The schedules as GET /api/schedules gives them, oldest first."""
        ...

    async def add_schedule(self, body: Json) -> Json:
        """Make the schedule a POST /api/schedules `body` names; the schedule."""
        ...

    async def edit_schedule(self, schedule_id: str, body: Json) -> Json:
        """Apply a PATCH /api/schedules/ID `body` (pause: `{"enabled": false}`); the schedule."""
        ...

    async def delete_schedule(self, schedule_id: str) -> None: ...

    async def usage(self, first: str | None, last: str | None, everyone: bool) -> list[Json]:
        """GET /api/usage's rows (days YYYY-MM-DD, UTC)."""
        ...

    async def audit(self, since: str | None, limit: int) -> list[Json]:
        """GET /api/audit's entries (admins only)."""
        ...

    async def memories(self) -> list[Json]:
        """What the agent remembers about the user, as GET /api/memory gives it: `[{id, text,
        createdAt, updatedAt}]`, newest first (locally: the bootstrap admin's, this machine's user)."""
        ...

    async def forget_memory(self, memory: str) -> None:
        """Forget one; NOT_FOUND when the user has no memory of that id."""
        ...

    async def collections(self) -> list[Json]:
        """The user's knowledge collections, as GET /api/knowledge gives them."""
        ...

    async def knowledge_files(self, name: str) -> list[Json]:
        """A collection's files, as GET /api/knowledge/{name}/files gives them; NOT_FOUND for none."""
        ...

    async def add_knowledge(self, name: str, files: list[tuple[str, bytes]]) -> list[Json]:
        """Put files (name, bytes) into the collection (created if new): what became of each."""
        ...

    async def remove_knowledge(self, name: str, file: str | None) -> None:
        """Delete a file of the collection, or (file None) the whole collection; NOT_FOUND for none."""
        ...

    async def run(self, body: Json, printer: Printer, stopper: Stopper) -> tuple[str, str]:
        """Start the run a POST /api/chat `body` names and feed its events to `printer`
        until it ends; `stopper` (and a closed stdout) stop it. (conversation, run)."""
        ...

    async def aclose(self) -> None:
        """Close what the client opened (connections, the database, tool servers)."""
        ...
