"""Settings: one typed, frozen object whose defaults config/defaults.yaml documents."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from entrypoints.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_yaml_lists_every_setting_with_its_default_and_nothing_else() -> None:
    documented = yaml.safe_load((ROOT / "config" / "defaults.yaml").read_text(encoding="utf-8"))
    assert sorted(documented) == sorted(f.name for f in dataclasses.fields(Settings))
    # read through the loader, so "false" in YAML and False in Python compare alike
    from_file = load_settings({"CONFIG_DIR": str(ROOT / "config")})
    assert from_file == dataclasses.replace(Settings(), CONFIG_DIR=str(ROOT / "config"))


def test_settings_are_typed_and_frozen(tmp_path: Path) -> None:
    s = load_settings({"CONFIG_DIR": str(tmp_path), "PORT": "9001", "AUTO_RESUME": "True", "RUN_LEASE_SECONDS": "2.5"})
    assert (s.PORT, s.AUTO_RESUME, s.RUN_LEASE_SECONDS, s.storage_backend) == (9001, True, 2.5, "sqlite")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.PORT = 1  # type: ignore[misc]


def test_a_number_in_yaml_for_a_text_setting_is_read_as_text(tmp_path: Path) -> None:
    (tmp_path / "defaults.yaml").write_text("OLLAMA_MODEL: 7\nPORT: 8123\n", encoding="utf-8")
    s = load_settings({"CONFIG_DIR": str(tmp_path)})
    assert (s.OLLAMA_MODEL, s.PORT) == ("7", 8123)
