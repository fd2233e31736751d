"""The models a conversation may choose: the model server's own list, kept briefly.

A picker asks for the list on every page load and every new conversation checks a chosen
name against it, so the list is kept for `fresh` seconds; one request at a time refreshes
it (concurrent callers wait for that one). A server that does not answer costs a caller at
most the adapter's listing timeout, and the last list known is kept for `stale` seconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from domain.errors import ModelBadResponse, ModelUnreachable
from domain.model import SystemMode
from domain.models import ModelChoice, ModelInfo, find_model, known_model
from ports.model import ModelPort

FRESH = 10.0
STALE = 300.0


class ModelCatalog:
    def __init__(
        self, model: ModelPort, fresh: float = FRESH, stale: float = STALE, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.model = model
        self.fresh = fresh
        self.stale = stale
        self.clock = clock
        self._list: tuple[float, Sequence[ModelInfo]] | None = None
        self._lock = asyncio.Lock()

    @property
    def default(self) -> str:
        return self.model.name

    async def list(self) -> Sequence[ModelInfo]:
        """The server's models (ModelUnreachable or ModelBadResponse when it cannot say and
        no list of the last `stale` seconds is known)."""
        hit = self._list
        if hit is not None and self.clock() - hit[0] < self.fresh:
            return hit[1]
        async with self._lock:
            hit = self._list
            if hit is not None and self.clock() - hit[0] < self.fresh:
                return hit[1]
            try:
                models = await self.model.models()
            except (ModelUnreachable, ModelBadResponse):
                if hit is not None and self.clock() - hit[0] < self.stale:
                    return hit[1]
                raise
            self._list = (self.clock(), models)
            return models

    async def check(self, name: str | None) -> None:
        """UnknownModel (a 400, before anything is stored) when the server answers and
        does not list `name`. A server that cannot be asked lets the name through: the run
        then fails with the server's own error, which says what is wrong."""
        if name is None:
            return
        try:
            models = await self.list()
        except (ModelUnreachable, ModelBadResponse):
            return
        known_model(name, models, self.model.pull_hint.format(name=name))

    async def choice(self, model: str | None, system: str | None, mode: SystemMode = SystemMode.ADD) -> ModelChoice:
        """What a run of a conversation with these settings uses, with the model's context
        size when the server reported it (a listing already known, never waited for long)."""
        context = None
        hit = self._list
        if hit is None:
            try:
                await asyncio.wait_for(self.list(), 2.0)
            except (TimeoutError, ModelUnreachable, ModelBadResponse):
                pass
            hit = self._list
        if hit is not None:
            found = find_model(model or self.default, hit[1])
            context = found.context if found is not None else None
        return ModelChoice(model, system, context, mode)
