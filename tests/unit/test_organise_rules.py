"""The rules of issue 48 items 12 and 13 as plain functions: how a conversation's
instructions join the server's prompt, what a request may say about pins, the archive and
a preset, and how a list is chosen."""

from __future__ import annotations

import pytest

from domain.errors import InvalidInput
from domain.model import SystemMode
from domain.models import ChatSettings, compose_system, settings_change
from domain.organise import MAIN, Organise, Shown, organise_change, shown_by
from domain.presets import check_preset_name, preset_settings


def test_instructions_follow_the_servers_prompt_unless_they_replace_it() -> None:
    assert compose_system("Server.", None) == "Server."
    assert compose_system("Server.", "Mine.") == "Server.\n\nMine."
    assert compose_system("Server.", "Mine.", SystemMode.REPLACE) == "Mine."
    assert compose_system("Server.", None, SystemMode.REPLACE) == "Server."  # nothing to replace it with


def test_a_settings_change_names_the_system_mode_apart() -> None:
    current = ChatSettings("m", "Mine.", SystemMode.REPLACE)
    assert settings_change({"system": "Other."}).apply(current) == ChatSettings("m", "Other.", SystemMode.REPLACE)
    assert settings_change({"system_mode": None}).apply(current) == ChatSettings("m", "Mine.", SystemMode.ADD)
    with pytest.raises(InvalidInput, match="systemMode"):
        settings_change({"system_mode": "REPLACE"})


def test_pins_and_the_archive_are_booleans_named_or_left_alone() -> None:
    assert organise_change({"pinned": True}) == Organise(pinned=True)
    assert organise_change({"title": "x"}).empty
    for bad in ({"pinned": "true"}, {"archived": 0}, {"archived": None}):
        with pytest.raises(InvalidInput, match="must be true or false"):
            organise_change(bad)


def test_a_list_is_the_main_one_unless_the_archive_or_pins_are_asked_for() -> None:
    assert shown_by({}) == MAIN == Shown(archived=False)
    assert shown_by({"archived": "true"}) == Shown(archived=True)
    assert shown_by({"pinned": "false"}) == Shown(archived=False, pinned=False)
    with pytest.raises(InvalidInput):
        shown_by({"pinned": "yes"})
    assert Shown().keeps(pinned=True, archived=True) and not MAIN.keeps(pinned=False, archived=True)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("a/b", "'/'"),
        ("a\u202eb", "control"),
        ("x" * 61, "at most 60"),
        (7, "must be a string"),
        ("\ud800", "not valid Unicode"),
    ],
)
def test_a_bad_preset_name_is_refused(name: object, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        check_preset_name(name)


def test_a_preset_name_is_trimmed_and_its_settings_checked() -> None:
    assert check_preset_name("  Pirate   captain ") == "Pirate captain"
    assert preset_settings({}) == ChatSettings()
    assert preset_settings({"model": "qwen3", "system_mode": "replace"}) == ChatSettings("qwen3", None, SystemMode.REPLACE)
