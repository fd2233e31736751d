"""ChatGPT's conversations.json read as plain functions: a malformed file is refused with one
line naming the place, whatever its shape; an image leaves a marker; the branches of a tree
cost what its nodes do (linear), and a tree with too many is refused at the limit."""

from __future__ import annotations

import copy
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from domain import chatgpt
from domain.chatgpt import IMAGE, from_chatgpt
from domain.errors import InvalidImport
from domain.transfer import Limits

FIXTURE = Path(__file__).parents[1] / "fixtures" / "chatgpt" / "conversations.json"
NOW = datetime(2026, 3, 1, tzinfo=UTC)


def sample() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(FIXTURE.read_text())
    return data


def refusal(doc: Any) -> str:
    with pytest.raises(InvalidImport) as e:
        from_chatgpt(doc, NOW)
    assert "\n" not in e.value.message
    return e.value.message


def trip_with(change: Any) -> list[dict[str, Any]]:
    data = sample()
    change(data[0]["mapping"])
    return data


def test_the_sample_reads_whole() -> None:
    trip, weather = from_chatgpt(sample(), NOW)
    assert (trip.title, len(trip.branches), trip.active) == ("Planning a trip", 3, 2)
    assert [m.content for m in weather.content(weather.active)] == [
        f"{IMAGE}\nWhat is the weather in Paris today?",
        "18 °C and cloudy.",
    ]


def set_(path: list[Any], value: Any) -> Any:
    def change(mapping: dict[str, Any]) -> None:
        target: Any = mapping
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def cycle(mapping: dict[str, Any]) -> None:
    # u2 -> a2 -> u2: each lists the other as its child and names it as its parent
    mapping["a1"]["children"] = []
    mapping["u2"]["parent"] = "a2"
    mapping["a2"]["children"] = ["u2"]


def unlisted(mapping: dict[str, Any]) -> None:
    mapping["a1"]["children"] = []  # u2 still names a1 as its parent


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (cycle, 'conversation 1: mapping["u2"].parent: its parents go round in a cycle'),
        (unlisted, 'conversation 1: mapping["u2"] is not among the children of its parent mapping["a1"]'),
        (
            set_(["u2", "message", "content", "parts"], "not a list"),
            'conversation 1: mapping["u2"].message.content.parts must be a list or null',
        ),
        (
            set_(["u1", "message", "author", "role"], 7),
            'conversation 1: mapping["u1"].message.author.role must be a string or null',
        ),
        (set_(["a1", "children"], "u2"), 'conversation 1: mapping["a1"].children must be a list or null'),
        (
            set_(["a2", "children"], ["u1"]),
            'conversation 1: mapping["a2"].children[0] is mapping["u1"], whose parent is another node',
        ),
        (set_(["a1", "children"], ["u2", "u2"]), 'conversation 1: mapping["a1"].children lists mapping["u2"] twice'),
        (
            set_(["a1", "children"], ["u2", 17]),
            'conversation 1: mapping["a1"].children[1] must be the id of a node of the mapping',
        ),
        (
            set_(["a1", "children"], ["u2", "missing"]),
            'conversation 1: mapping["a1"].children[1] must be the id of a node of the mapping',
        ),
        (
            set_(["u2", "parent"], "missing"),
            'conversation 1: mapping["u2"].parent must be null or the id of a node of the mapping',
        ),
        (set_(["junk"], "not a node"), 'conversation 1: mapping["junk"] must be an object'),
        (set_(["u2", "message"], ["not", "a", "message"]), 'conversation 1: mapping["u2"].message must be an object or null'),
        (set_(["u2", "message", "content"], "text"), 'conversation 1: mapping["u2"].message.content must be an object or null'),
        (
            set_(["u2", "message", "content", "parts"], ["a", 3]),
            'conversation 1: mapping["u2"].message.content.parts[1] must be text or an object',
        ),
        (
            set_(["u2", "message", "create_time"], "yesterday"),
            'conversation 1: mapping["u2"].message.create_time must be a number of seconds or null',
        ),
        (
            set_(["system", "message", "author"], "system"),
            'conversation 1: mapping["system"].message.author must be an object or null',
        ),
    ],
)
def test_a_malformed_node_is_refused_naming_the_place(change: Any, expected: str) -> None:
    assert refusal(trip_with(change)) == expected


def test_a_malformed_conversation_field_is_refused_naming_it() -> None:
    for key, value, expected in [
        ("title", 12, "conversation 2: title must be a string or null"),
        ("current_node", "nowhere", "conversation 2: current_node must be the id of a node of the mapping"),
        ("create_time", "today", "conversation 2: create_time must be a number of seconds or null"),
    ]:
        data = sample()
        data[1][key] = value
        assert refusal(data) == expected


def test_a_hostile_node_id_is_named_on_one_line_and_shortened() -> None:
    data = sample()
    data[0]["mapping"]["line\nbreak" + "x" * 500] = 3
    assert refusal(data) == 'conversation 1: mapping["line\\nbreak' + "x" * 30 + '..."] must be an object'


def test_every_image_part_leaves_a_marker_and_an_image_alone_is_kept() -> None:
    data = sample()
    parts = data[1]["mapping"]["ask"]["message"]["content"]["parts"]
    parts.append({"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-2"})
    [answer] = [n for n in data[1]["mapping"].values() if n["id"] == "answer"]
    answer["message"]["content"] = {
        "content_type": "multimodal_text",
        "parts": [{"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-3"}],
    }
    _, weather = from_chatgpt(data, NOW)
    assert [m.content for m in weather.content(1)] == [f"{IMAGE}\nWhat is the weather in Paris today?\n{IMAGE}", IMAGE]


def regenerations(turns: int) -> dict[str, Any]:
    """A conversation whose every answer was regenerated once: a branch per turn."""

    def node(i: str, role: str, parent: str | None, children: list[str], t: float) -> dict[str, Any]:
        return {
            "id": i,
            "parent": parent,
            "children": children,
            "message": {"author": {"role": role}, "create_time": t, "content": {"content_type": "text", "parts": [i]}},
        }

    mapping = {"root": node("root", "system", None, [], 0)}
    above = "root"
    for i in range(turns):
        u, a, b = f"u{i}", f"a{i}", f"b{i}"
        mapping[above]["children"].append(u)
        mapping[u] = node(u, "user", above, [a, b], 3 * i + 1)
        mapping[a] = node(a, "assistant", u, [], 3 * i + 2)
        mapping[b] = node(b, "assistant", u, [], 3 * i + 3)
        above = a
    return {"title": "many", "current_node": above, "mapping": mapping}


def cpu_seconds(doc: Any, limits: Limits) -> float:
    started = time.process_time()
    from_chatgpt(doc, NOW, limits)
    return time.process_time() - started


def test_the_branches_of_a_tree_are_built_in_linear_time() -> None:
    wide = Limits(messages=100_000, branches=100_000)
    small, large = regenerations(1_000), regenerations(8_000)
    [copy_] = from_chatgpt(large, NOW, wide)
    assert len(copy_.branches) == 8_001 and copy_.active == 1
    # best of three each: eight times the nodes, about eight times the work (10x measured;
    # the quadratic build it replaces: 35x)
    ratio = min(cpu_seconds(large, wide) for _ in range(3)) / min(cpu_seconds(small, wide) for _ in range(3))
    assert ratio < 20, ratio


def test_a_tree_with_too_many_branches_is_refused_at_the_limit_before_building_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    original = chatgpt.BranchCopy

    def counting(*args: Any) -> Any:
        built.append(1)
        return original(*args)

    monkeypatch.setattr(chatgpt, "BranchCopy", counting)
    with pytest.raises(InvalidImport, match="^conversation 1: more than 200 branches$"):
        from_chatgpt(copy.deepcopy(regenerations(5_000)), NOW, Limits(messages=100_000))
    assert len(built) == 200
