"""The opt-in web search (issue 48 item 15): the shipped `config/mcp.json` has a SearXNG
server entry that is off, that enabling it is that one change (the entry is checked like any
other), and that the shipped system prompt asks for results to be cited."""

from __future__ import annotations

import json
from pathlib import Path

from adapters.mcp.config import load_mcp_config
from tests.support.app import ROOT

SHIPPED = ROOT / "config"


def test_the_shipped_config_has_a_web_search_server_that_is_off(tmp_path: Path) -> None:
    config = load_mcp_config(SHIPPED, tmp_path / "memory.jsonl")
    assert set(config.servers) == {"memory", "fetch"} and config.errors == {}
    assert config.disabled == ("searxng",)


def test_enabling_web_search_is_one_change_to_a_valid_entry(tmp_path: Path) -> None:
    raw = json.loads((SHIPPED / "mcp.json").read_text())
    raw["searxng"]["disabled"] = False
    (tmp_path / "mcp.json").write_text(json.dumps(raw))
    config = load_mcp_config(tmp_path, tmp_path / "memory.jsonl")
    assert config.errors == {} and config.disabled == ()
    assert config.servers["searxng"] == {
        "transport": "stdio",
        "command": "npx",
        "args": ["-y", "mcp-searxng@1.16.0"],
        "env": {"SEARXNG_URL": "http://127.0.0.1:8888"},
    }
    assert config.approval["searxng"] == ((), ("searxng_*", "web_url_read"))  # read-only tools
    assert config.timeouts["searxng"] == 60


def test_a_disabled_entry_is_still_checked_and_disabled_must_be_a_boolean(tmp_path: Path) -> None:
    (tmp_path / "mcp.json").write_text(
        json.dumps(
            {
                "off": {"disabled": True, "command": "npx", "args": "not a list"},
                "odd": {"disabled": "yes", "command": "npx"},
            }
        )
    )
    config = load_mcp_config(tmp_path, tmp_path / "memory.jsonl")
    assert config.servers == {} and config.disabled == ()
    assert "args must be a list" in config.errors["off"]
    assert "disabled must be true or false" in config.errors["odd"]


def test_the_shipped_system_prompt_asks_for_web_results_to_be_cited_with_their_urls() -> None:
    prompt = (SHIPPED / "system.md").read_text()
    section = prompt.split("## Web search", 1)[1].split("\n## ", 1)[0]
    assert "Cite" in section and "URL" in section and "never make up a URL" in section
