"""Settings: one typed, frozen object whose every default is declared once (the Settings
class), with the checks and the docs' table generated from the declarations."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from entrypoints.settings import Settings, SettingsError, load_settings
from entrypoints.settings_rules import RULE, docs_table

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_defaults_file_repeats_no_default() -> None:
    # the defaults are written once: the file holds only what an installation changes
    changed = yaml.safe_load((ROOT / "config" / "defaults.yaml").read_text(encoding="utf-8")) or {}
    declared = {f.name: f.default for f in dataclasses.fields(Settings)}
    assert not {k: v for k, v in changed.items() if declared.get(k) == v}
    assert load_settings({"CONFIG_DIR": str(ROOT / "config")}) == dataclasses.replace(Settings(), CONFIG_DIR=str(ROOT / "config"))


def test_every_setting_is_one_declaration_with_a_doc_line() -> None:
    for f in dataclasses.fields(Settings):
        assert RULE in f.metadata and f.metadata[RULE].doc, f.name
        assert f.type in ("str", "int", "float", "bool"), f.name


def test_the_docs_table_is_the_one_the_declarations_make() -> None:
    # scripts/settings-table rewrites it
    assert docs_table(Settings) in (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "settings-table"), "--check"], check=False)
    assert done.returncode == 0


def test_a_defaults_file_changes_what_it_names_and_the_environment_wins(tmp_path: Path) -> None:
    (tmp_path / "defaults.yaml").write_text("OLLAMA_MODEL: llama3.2\nPORT: 8123\nCONFIG_DIR: elsewhere\n", encoding="utf-8")
    s = load_settings({"CONFIG_DIR": str(tmp_path), "PORT": "9000"})
    assert (s.OLLAMA_MODEL, s.PORT, s.CONFIG_DIR) == ("llama3.2", 9000, str(tmp_path))


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MODEL_BACKEND": "Bedrock"}, "MODEL_BACKEND must be ollama, openai or demo, got 'bedrock'"),
        ({"MODEL_TOOL_CHOICE": "always"}, "MODEL_TOOL_CHOICE must be auto, required or none (or unset), got 'always'"),
        ({"MAX_QUEUED": "0"}, "MAX_QUEUED must be between 1 and 1000, got 0"),
        ({"TOOL_TIMEOUT": "0"}, "TOOL_TIMEOUT must be above 0, at most 86400, got 0.0"),
        ({"PORT": "eighty"}, "PORT must be a whole number, got 'eighty'"),
        ({"SSE_PING_SECONDS": "soon"}, "SSE_PING_SECONDS must be a number, got 'soon'"),
        ({"LANGGRAPH_API_PORT": "70000"}, "LANGGRAPH_API_PORT must be a port (1-65535) or 0 (off), got 70000"),
        ({"STORAGE_BACKEND": "postgres"}, "STORAGE_BACKEND=postgres needs DATABASE_URL (a postgresql:// URL)"),
        ({"DATABASE_URL": "mysql://u:secret@h/db"}, "DATABASE_URL must be a postgresql:// URL, got 'mysql://u@h/db'"),
    ],
)
def test_a_value_its_declaration_refuses_is_one_line_naming_it(env: dict[str, str], message: str, tmp_path: Path) -> None:
    with pytest.raises(SettingsError) as e:
        load_settings({"CONFIG_DIR": str(tmp_path), **env})
    assert str(e.value) == message


def test_an_unusable_recursion_limit_means_the_default_and_choices_read_in_any_case(tmp_path: Path) -> None:
    for bad in ("0", "-3", "many"):
        assert load_settings({"CONFIG_DIR": str(tmp_path), "AGENT_RECURSION_LIMIT": bad}).AGENT_RECURSION_LIMIT == 25
    s = load_settings({"CONFIG_DIR": str(tmp_path), "TOOL_APPROVAL": " ALL ", "AUTO_RESUME": "TRUE", "CONTEXT_SUMMARY": "yes"})
    assert (s.TOOL_APPROVAL, s.AUTO_RESUME, s.CONTEXT_SUMMARY) == ("all", True, False)


def test_settings_are_typed_and_frozen(tmp_path: Path) -> None:
    s = load_settings({"CONFIG_DIR": str(tmp_path), "PORT": "9001", "AUTO_RESUME": "True", "RUN_LEASE_SECONDS": "2.5"})
    assert (s.PORT, s.AUTO_RESUME, s.RUN_LEASE_SECONDS, s.storage_backend) == (9001, True, 2.5, "sqlite")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.PORT = 1  # type: ignore[misc]


def test_a_number_in_yaml_for_a_text_setting_is_read_as_text(tmp_path: Path) -> None:
    (tmp_path / "defaults.yaml").write_text("OLLAMA_MODEL: 7\nPORT: 8123\n", encoding="utf-8")
    s = load_settings({"CONFIG_DIR": str(tmp_path)})
    assert (s.OLLAMA_MODEL, s.PORT) == ("7", 8123)
