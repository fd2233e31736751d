"""What RunService offers the edges to follow runs: the conversation's live run, its events
after an id, and the chain of runs that follows a first one (services.following does the
work on the kernel; a mixin of RunService, so the use cases stay in services/runs.py)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from functools import partial

from domain.commands import Resume, StartRun
from domain.events import StreamEvent
from domain.model import Run, RunTrigger
from domain.principals import LOCAL, Principal
from domain.queue import QueuedMessage
from services import following
from services.handles import Item, LiveRun, RunStream, StartedRun
from services.kernel import RunKernel


class Follows:
    kernel: RunKernel

    async def start(self, command: StartRun, trigger: RunTrigger = RunTrigger.USER, *, by: Principal = LOCAL) -> StartedRun:
        raise NotImplementedError

    async def live_run(self, conversation_id: str) -> LiveRun | None:
        """The conversation's running run, wherever it executes."""
        return await self.kernel.live_run(conversation_id)

    async def is_active(self, conversation_id: str) -> bool:
        return await self.kernel.live_run(conversation_id) is not None

    async def follow(
        self, conversation_id: str, after: int, tag: str | None = None, through_queue: bool = False
    ) -> AsyncGenerator[Item, None] | StreamEvent:
        """The events of the conversation's live run after id `after`, one at a time
        (services.following.follow_batches)."""
        answer = await self.follow_batches(conversation_id, after, tag, through_queue)
        return answer if isinstance(answer, StreamEvent) else following.flatten(answer)

    async def follow_batches(
        self,
        conversation_id: str,
        after: int,
        tag: str | None = None,
        through_queue: bool = False,
        *,
        by: Principal = LOCAL,
    ) -> RunStream | StreamEvent:
        """The conversation's live run after id `after`, in batches; another user's
        conversation answers as an unknown one (services.following.follow_batches)."""
        return await following.follow_batches(self.kernel, conversation_id, after, tag, through_queue, by=by)

    def follow_from(
        self, first: Run | QueuedMessage | StartedRun, after: int = 0, *, by: Principal = LOCAL, resume: bool = True
    ) -> AsyncGenerator[RunStream, None]:
        """The runs a client follows from `first` on (services.following.follow_from): a run
        a crash stopped is followed by the run that resumed it, else (with `resume`) by a
        resume started here as `by`."""
        resumer = partial(self._resume, by=by) if resume else None
        return following.follow_from(self.kernel, first, after, resume=resumer)

    async def _resume(self, conversation_id: str, *, by: Principal) -> StartedRun:
        return await self.start(Resume(conversation_id), by=by)

    async def restartable(self, run: Run) -> bool:
        """Never for Sophos's agent: a message that never reached its thread is its client's
        to send again (INPUT_NOT_RECORDED); hosted graphs' runs start again (services.hosted)."""
        return False

    async def rejoin_point(self, run: Run, after: int, tag: str | None) -> tuple[Run, int]:
        """Where a re-join of `run` after event `after@tag` resumes (services.following)."""
        return await following.rejoin_point(self.kernel, run, after, tag)
