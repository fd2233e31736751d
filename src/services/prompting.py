"""Each model call's prompt under the context budget: planning (domain.context), durable
summaries written by the model, and a token estimate calibrated per conversation with
the counts the model server reports."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from domain.context import (
    ContextPolicy,
    CostCache,
    PromptPlan,
    clip_summary,
    estimate_text,
    plan_prompt,
    summary_request,
)
from domain.model import AssistantMessage, Message, SummaryMessage, UserMessage, new_id
from domain.models import SERVER_DEFAULT, ModelChoice
from ports.model import ModelPort, Usage
from ports.tools import ToolSpec

MIN_RATIO, MAX_RATIO = 0.25, 4.0
TRUNCATED = 0.75  # a report under this share of what was sent means the server cut the prompt


@dataclass(frozen=True)
class Evaluation:
    """What the model server reported evaluating, against what was sent."""

    sent: int  # calibrated estimate of the tokens sent
    evaluated: int
    truncated: bool
    filled: bool = False  # the report reached the window: the server certainly cut the prompt


@dataclass(frozen=True)
class Spent:
    """What a summary call cost: the server's counts (None: it reported none), the request's
    estimated tokens and the answer, to estimate from."""

    usage: Usage | None
    sent: int
    answer: str


class Calibration:
    """Per conversation: tokens the server counted / tokens estimated (bounded LRU)."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._ratios: OrderedDict[str, float] = OrderedDict()

    def ratio(self, key: str) -> float:
        return self._ratios.get(key, 1.0)

    def observe(self, key: str, raw_tokens: int, reported: int | None, window: int) -> Evaluation | None:
        """Learn from one call. None when the server reported nothing usable (a prompt
        served from its cache may report no count). A report that fills the window, or
        falls well short of what was sent, means the server cut the prompt: it is not
        taken as the truth, except that the estimate was too low."""
        if not reported or raw_tokens <= 0:
            return None
        current = self.ratio(key)
        sent = round(raw_tokens * current)
        truncated = reported < TRUNCATED * sent or reported >= window
        if not truncated:
            ratio = reported / raw_tokens
        elif reported >= window:
            ratio = max(current * 1.25, reported / raw_tokens)
        else:
            ratio = current
        self._ratios[key] = min(max(ratio, MIN_RATIO), MAX_RATIO)
        self._ratios.move_to_end(key)
        if len(self._ratios) > self.size:
            self._ratios.popitem(last=False)
        return Evaluation(sent, reported, truncated, reported >= window)


class ContextKeeper:
    """Plans prompts for a model under a ContextPolicy and writes summaries with it."""

    def __init__(self, model: ModelPort, policy: ContextPolicy) -> None:
        self.model = model
        self.policy = policy
        self.calibration = Calibration()
        self.costs = CostCache()
        self._warned: OrderedDict[str, None] = OrderedDict()  # conversations told of a short count

    def first_warning(self, conversation_id: str) -> bool:
        """Whether a conversation has not been warned of a short prompt count yet (and now is):
        a server whose count is off (a proxy that reports words) is off on every turn, and
        one line says it; bounded like the calibration."""
        if conversation_id in self._warned:
            return False
        self._warned[conversation_id] = None
        if len(self._warned) > self.calibration.size:
            self._warned.popitem(last=False)
        return True

    def policy_for(self, choice: ModelChoice) -> ContextPolicy:
        """The policy for the chosen model: its window is the smaller of MODEL_CONTEXT and
        the model's own context size, when the server reported one (a model with a small
        window gets a small budget; a larger one is not used beyond what is configured,
        which is what Ollama is sent as num_ctx)."""
        if choice.context is None or choice.context >= self.policy.window:
            return self.policy
        window = max(choice.context, 2 * self.policy.reserve, 1)
        return replace(self.policy, window=window)

    @staticmethod
    def key(conversation_id: str, choice: ModelChoice) -> str:
        """Calibration is per conversation and model: another model tokenizes otherwise."""
        return conversation_id if choice.model is None else f"{conversation_id}\0{choice.model}"

    def plan(
        self,
        conversation_id: str,
        thread: Sequence[Message],
        system: str,
        tools: Sequence[ToolSpec],
        choice: ModelChoice = SERVER_DEFAULT,
    ) -> PromptPlan:
        ratio = self.calibration.ratio(self.key(conversation_id, choice))
        return plan_prompt(thread, system, tools, self.policy_for(choice), ratio, self.costs)

    async def summarize(
        self, thread: Sequence[Message], plan: PromptPlan, model: str | None = None, spent: list[Spent] | None = None
    ) -> SummaryMessage:
        """Ask the model (without tools) for a summary of the range `plan.summarize`,
        folding in the summary in use; the result replaces that range from now on. The
        call's cost is appended to `spent` (for the usage meter) once it answered."""
        assert plan.summarize is not None
        start, end = plan.summarize
        system, text = summary_request(plan.summary, thread[start:end], self.policy)
        reply: AssistantMessage | None = None
        usage: Usage | None = None
        async for out in self.model.stream(system, [UserMessage(text)], [], model):
            if isinstance(out, AssistantMessage):
                reply = out
            elif isinstance(out, Usage):
                usage = out
        if spent is not None:
            spent.append(Spent(usage, estimate_text(system) + estimate_text(text), reply.content if reply else ""))
        content = clip_summary(reply.content if reply else "", self.policy)
        return SummaryMessage(content or "(the model wrote no summary)", end, id=f"summary-{new_id()}")

    def observe(
        self, conversation_id: str, plan: PromptPlan, usage: Usage | None, choice: ModelChoice = SERVER_DEFAULT
    ) -> Evaluation | None:
        reported = usage.prompt_tokens if usage else None
        window = self.policy_for(choice).window
        return self.calibration.observe(self.key(conversation_id, choice), plan.raw_tokens, reported, window)
