"""The rules of a conversation's model choice, its reasoning events and their storage, as
plain functions and use cases over in-memory adapters."""

from __future__ import annotations

import pytest

from adapters.memory.model import ScriptedModel
from adapters.storage.event_rows import pack, unpack
from domain.context import ContextPolicy
from domain.errors import InvalidInput, ModelUnreachable, UnknownModel
from domain.events import ReasoningDelta, StreamEvent
from domain.models import ChatSettings, ModelChoice, ModelInfo, check_model_name, find_model, settings_change
from services.models import ModelCatalog
from services.prompting import ContextKeeper
from services.stream import StreamTranslator

LISTED = [ModelInfo("qwen3:latest", context=40960), ModelInfo("llama3.2:1b", context=2048)]


def test_a_bare_name_means_its_latest_tag_and_nothing_else() -> None:
    assert find_model("qwen3", LISTED) is LISTED[0]
    assert find_model("qwen3:latest", LISTED) is LISTED[0]
    assert find_model("llama3.2", LISTED) is None  # only `:latest` is implied, as Ollama does
    assert find_model("llama3.2:1b", LISTED) is LISTED[1]


@pytest.mark.parametrize("bad", ["a\x00b", "a\tb", "\u200bqwen3", "qwen3\u2028", "m" * 201, 3, ["qwen3"]])
def test_a_model_name_with_control_characters_or_too_long_is_refused(bad: object) -> None:
    with pytest.raises(InvalidInput):
        check_model_name(bad)


def test_a_change_touches_only_the_fields_it_names_and_null_is_the_default() -> None:
    current = ChatSettings("qwen3", "Be brief.")
    assert settings_change({}).apply(current) == current and settings_change({}).empty
    assert settings_change({"model": "llama3.2"}).apply(current) == ChatSettings("llama3.2", "Be brief.")
    assert settings_change({"system": None}).apply(current) == ChatSettings("qwen3", None)
    assert settings_change({"model": "  ", "system": "   "}).apply(current) == ChatSettings(None, None)


class Counting(ScriptedModel):
    calls: int = 0
    down: bool = False

    async def models(self) -> list[ModelInfo]:  # type: ignore[override]
        self.calls += 1
        if self.down:
            raise ModelUnreachable("down")
        return list(LISTED)


async def test_the_catalog_keeps_the_list_briefly_and_the_last_one_while_the_server_is_down() -> None:
    now = [0.0]
    model = Counting()
    catalog = ModelCatalog(model, fresh=10, stale=300, clock=lambda: now[0])
    assert [m.name for m in await catalog.list()] == ["qwen3:latest", "llama3.2:1b"]
    await catalog.list()
    assert model.calls == 1
    now[0], model.down = 11.0, True
    assert len(await catalog.list()) == 2 and model.calls == 2  # asked again, the last list kept
    now[0] = 400.0
    with pytest.raises(ModelUnreachable):
        await catalog.list()


async def test_an_unknown_model_is_refused_with_the_backends_fix_but_a_silent_server_lets_it_through() -> None:
    model = Counting()
    catalog = ModelCatalog(model)
    with pytest.raises(UnknownModel, match="mistral"):
        await catalog.check("mistral")
    await catalog.check("qwen3")
    model.down = True
    await ModelCatalog(model).check("mistral")  # the run will say what the server says


async def test_the_choice_carries_the_models_context_and_the_budget_is_the_smaller_window() -> None:
    catalog = ModelCatalog(Counting(model_name="qwen3"))
    small = await catalog.choice("llama3.2:1b", None)
    assert small == ModelChoice("llama3.2:1b", None, 2048)
    keeper = ContextKeeper(ScriptedModel(), ContextPolicy(window=8192, reserve=1024))
    assert keeper.policy_for(small).window == 2048
    assert keeper.policy_for(await catalog.choice(None, "s")).window == 8192  # qwen3's 40960 is not used
    assert keeper.key("c", ModelChoice()) == "c" and keeper.key("c", small) != "c"


def test_reasoning_is_its_own_stream_event_and_packed_like_tokens_but_apart() -> None:
    assert StreamTranslator().feed(ReasoningDelta(1, "hm")) == [StreamEvent("reasoning", "hm")]
    batch = [
        (1, StreamEvent("reasoning", "a")),
        (2, StreamEvent("reasoning", "b")),
        (3, StreamEvent("token", "c")),
        (4, StreamEvent("token", "d")),
        (5, StreamEvent("reasoning", "e")),
    ]
    rows = pack(batch)
    assert [r[1] for r in rows] == ["reasonings", "tokens", "reasoning"]
    assert list(unpack(rows, 0)) == batch
    assert list(unpack(rows, 1)) == batch[1:]
