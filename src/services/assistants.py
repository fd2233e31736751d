"""The assistants of hosted graphs (issue 44), as langgraph-api serves them: each graph's
start-up assistant (made when missing, once per process, as langgraph-api registers its
graphs; everyone's), and the ones users make, each their maker's: another user's answers as
an unknown one. An update makes a new version, which runs then use; `set_latest` pins any.

Only assistants of graphs the server hosts are seen (langgraph-api's rule): one whose graph
the `langgraph.json` no longer serves is kept but answers as unknown. A start-up assistant
may be changed or deleted by an admin only (others get FORBIDDEN: they may read it); deleted,
it is made again when a process starts."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from domain.assistants import (
    MAX_ASSISTANTS,
    MAX_VERSIONS,
    SYSTEM_METADATA,
    Assistant,
    AssistantExists,
    AssistantPatch,
    AssistantQuery,
    NewAssistant,
    page_versions,
    valid_id,
)
from domain.errors import ConversationNotFound, Forbidden, InvalidInput
from domain.graphs import GraphNotFound, assistant_id_of
from domain.model import utc_now
from domain.principals import LOCAL, Principal, owner_filter
from ports.assistants import AssistantStore
from ports.graphs import GraphCatalog


def _not_found(ref: object) -> ConversationNotFound:
    return ConversationNotFound(f"Assistant {str(ref)[:64]!r} not found")


class AssistantService:
    def __init__(
        self, store: AssistantStore, catalog: Callable[[], GraphCatalog], clock: Callable[[], datetime] = utc_now
    ) -> None:
        self.store = store
        self._catalog = catalog
        self.clock = clock
        self._registered = False

    def graph_ids(self) -> tuple[str, ...]:
        return tuple(g.graph_id for g in self._catalog().graphs())

    async def register(self) -> None:
        """Each hosted graph's start-up assistant, made when missing (langgraph-api's
        `if_exists: do_nothing` at start-up): a deleted one comes back when a process starts."""
        now, graphs = self.clock(), self._catalog().graphs()
        for place, graph in enumerate(graphs):
            # the file's first graph the newest, a millisecond apart: a search (newest first) lists them in its order
            at = now + timedelta(milliseconds=len(graphs) - place)
            made = Assistant(
                graph.assistant_id, graph.graph_id, graph.graph_id, {}, {}, SYSTEM_METADATA, 1, at, at, graph.description or None
            )
            with contextlib.suppress(AssistantExists):
                await self.store.create(made, 0)
        self._registered = True

    async def _ready(self) -> None:
        if not self._registered:
            await self.register()

    def _key(self, ref: object) -> str | None:
        """An assistant id, or a hosted graph's id as its start-up assistant's; None for
        anything else (no assistant has it)."""
        if isinstance(ref, str) and ref in self.graph_ids():
            return assistant_id_of(ref)
        try:
            return valid_id(ref)
        except InvalidInput:
            return None

    async def get(self, ref: object, *, by: Principal = LOCAL) -> Assistant:
        """The assistant `ref` names (its id, or a hosted graph's id); 404 when unknown, not
        `by`'s to see, or of a graph no longer served."""
        await self._ready()
        key = self._key(ref)
        found = await self.store.get(key, owner_filter(by)) if key is not None else None
        if found is None or found.graph_id not in self.graph_ids():
            raise _not_found(ref)
        return found

    async def resolve(self, ref: object, *, by: Principal = LOCAL) -> Assistant | None:
        """The hosted graph's assistant a run names; None when `ref` names none of them
        (Sophos's own agent, or an unknown id: the caller decides); 404 for a hosted graph
        whose start-up assistant was deleted."""
        if not isinstance(ref, str):
            return None
        try:
            return await self.get(ref, by=by)
        except ConversationNotFound:
            if ref in self.graph_ids() or ref in {assistant_id_of(g) for g in self.graph_ids()}:
                raise
            return None

    async def create(self, new: NewAssistant, *, by: Principal = LOCAL) -> Assistant:
        await self._ready()
        if new.graph_id not in self.graph_ids():
            raise GraphNotFound(f"Graph {new.graph_id[:128]!r} not found: expected one of {', '.join(self.graph_ids())}")
        made = new.made(by.user_id, self.clock())
        try:
            await self.store.create(made, MAX_ASSISTANTS)
        except AssistantExists:
            seen = await self.store.get(made.assistant_id, owner_filter(by)) if new.if_exists == "do_nothing" else None
            if seen is None:
                raise AssistantExists(f"Assistant {made.assistant_id} already exists") from None
            return seen
        return made

    async def search(self, query: AssistantQuery, extra: Sequence[Assistant] = (), *, by: Principal = LOCAL) -> list[Assistant]:
        """The assistants `by` sees that match, as `query` sorts and pages them; `extra`: ones
        served beside the stored (Sophos's own agent)."""
        await self._ready()
        stored = await self.store.assistants(owner_filter(by), self.graph_ids())
        return query.select([*stored, *extra])

    async def count(self, query: AssistantQuery, extra: Sequence[Assistant] = (), *, by: Principal = LOCAL) -> int:
        await self._ready()
        stored = await self.store.assistants(owner_filter(by), self.graph_ids())
        return sum(1 for a in [*stored, *extra] if query.matches(a))

    async def _writable(self, ref: object, by: Principal) -> Assistant:
        found = await self.get(ref, by=by)
        if found.system and not by.is_admin:
            raise Forbidden("A graph's start-up assistant is changed by an admin only: create an assistant of your own")
        return found

    async def update(self, ref: object, patch: AssistantPatch, *, by: Principal = LOCAL) -> Assistant:
        found = await self._writable(ref, by)
        if patch.graph_id is not None and patch.graph_id not in self.graph_ids():
            raise GraphNotFound(f"Graph {patch.graph_id[:128]!r} not found")
        updated = await self.store.update(found.assistant_id, found.owner, patch, self.clock(), MAX_VERSIONS)
        if updated is None:
            raise _not_found(ref)  # deleted meanwhile
        return updated

    async def delete(self, ref: object, *, by: Principal = LOCAL) -> None:
        found = await self._writable(ref, by)
        if not await self.store.delete(found.assistant_id, found.owner):
            raise _not_found(ref)

    async def versions(
        self, ref: object, metadata: Mapping[str, Any], limit: int, offset: int, *, by: Principal = LOCAL
    ) -> list[Assistant]:
        found = await self.get(ref, by=by)
        versions = page_versions(await self.store.versions(found.assistant_id, owner_filter(by)), metadata, limit, offset)
        if not versions:
            raise _not_found(ref)
        return versions

    async def set_latest(self, ref: object, version: int, *, by: Principal = LOCAL) -> Assistant:
        found = await self._writable(ref, by)
        latest = await self.store.set_latest(found.assistant_id, found.owner, version, self.clock())
        if latest is None:
            raise ConversationNotFound(f"Version {version} not found for assistant {found.assistant_id}")
        return latest
