"""MetricsPort: what operators measure about this process (runs, model and tool calls,
streams, storage).

Every method is cheap (no I/O, never awaits), never raises, and may be called from any
thread (the checkpointer writes on its own). Label values must come from bounded sets:
statuses, error codes, stream sources, tool names the toolbox offers (anything else is
passed as `unknown`). Each process keeps its own figures.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

FIRING_OUTCOMES = ("started", "queued", "redone", "skipped", "failed", "deferred")  # services.scheduler
DELIVERY_OUTCOMES = ("delivered", "retried", "failed")  # services.webhooks
UNKNOWN_TOOL = "unknown"  # the tool label of a call to a tool the toolbox does not offer


class MetricsPort(Protocol):
    @abstractmethod
    def run_started(self, trigger: str) -> None:
        """This process started executing a run (`trigger`: a RunTrigger value)."""

    @abstractmethod
    def run_finished(self, status: str, error: str | None, seconds: float) -> None:
        """A run this process executed ended after `seconds`: `status` is the RunStatus
        recorded, or `lost` when another process had taken it over; `error` its code."""

    @abstractmethod
    def run_reclaimed(self, status: str) -> None:
        """A run nobody executed any more (dead owner, expired lease) was recorded as
        `status` by this process."""

    @abstractmethod
    def adoption(self, result: str) -> None:
        """An orphaned run was `adopted` (resumed here) or `gave_up` on (ADOPTION_FAILED)."""

    @abstractmethod
    def lease_lost(self) -> None:
        """A run this process executed was taken over by another one (its lease lapsed)."""

    @abstractmethod
    def stream_opened(self, source: str) -> None:
        """A follower started reading a live run's events: `local` (this process runs
        it) or `log` (another process does, read through the run event log)."""

    @abstractmethod
    def stream_closed(self, source: str) -> None:
        """That follower stopped (terminal event, client gone, shutdown)."""

    @abstractmethod
    def model_call(self, model: str, outcome: str, seconds: float) -> None:
        """One model call (one agent step) took `seconds`: outcome `ok`, `error` or
        `cancelled`."""

    @abstractmethod
    def model_tokens(self, model: str, input_tokens: int, output_tokens: int) -> None:
        """One model call of `model` took `input_tokens` in and gave `output_tokens` out (as
        the server counted them, or estimated where it reported none)."""

    @abstractmethod
    def tool_call(self, tool: str, outcome: str, seconds: float) -> None:
        """One tool call took `seconds`: `tool` is `<server>__<tool>` (or UNKNOWN_TOOL),
        outcome `ok`, `error` (an error result or an exception) or `cancelled`."""

    @abstractmethod
    def checkpoint_written(self, kind: str, size: int) -> None:
        """`size` bytes were committed to the checkpoint store: `checkpoint` (a
        checkpoint with its metadata) or `writes` (a task's pending writes)."""

    @abstractmethod
    def storage_failure(self, reason: str) -> None:
        """A storage call failed: `busy` (another writer held the lock too long) or
        `error` (disk full, read-only, I/O error, closed)."""

    @abstractmethod
    def maintenance_failed(self, task: str) -> None:
        """A round of the supervisor's background work (`task`: its name) failed."""

    @abstractmethod
    def schedule_fired(self, outcome: str, lateness: float) -> None:
        """A schedule's firing came to `outcome` (FIRING_OUTCOMES) `lateness` seconds after
        its time (0 for those that never started)."""

    @abstractmethod
    def webhook_delivered(self, outcome: str) -> None:
        """A webhook call came to `outcome` (DELIVERY_OUTCOMES: `retried` failed and will be
        tried again, `failed` failed for the last time)."""


class NullMetrics(MetricsPort):
    """Measures nothing: for one-shot commands that nobody scrapes, and the default of
    every component that takes a MetricsPort."""

    def run_started(self, trigger: str) -> None:
        pass

    def run_finished(self, status: str, error: str | None, seconds: float) -> None:
        pass

    def run_reclaimed(self, status: str) -> None:
        pass

    def adoption(self, result: str) -> None:
        pass

    def lease_lost(self) -> None:
        pass

    def stream_opened(self, source: str) -> None:
        pass

    def stream_closed(self, source: str) -> None:
        pass

    def model_call(self, model: str, outcome: str, seconds: float) -> None:
        pass

    def model_tokens(self, model: str, input_tokens: int, output_tokens: int) -> None:
        pass

    def tool_call(self, tool: str, outcome: str, seconds: float) -> None:
        pass

    def checkpoint_written(self, kind: str, size: int) -> None:
        pass

    def storage_failure(self, reason: str) -> None:
        pass

    def maintenance_failed(self, task: str) -> None:
        pass

    def schedule_fired(self, outcome: str, lateness: float) -> None:
        pass

    def webhook_delivered(self, outcome: str) -> None:
        pass


NO_METRICS = NullMetrics()
