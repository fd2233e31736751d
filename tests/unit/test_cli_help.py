"""`sophos --help` groups the commands, each with a whole one-line summary."""

from __future__ import annotations

from click.testing import CliRunner

from entrypoints.cli import main


def test_help_lists_every_command_once_in_its_group_with_an_uncut_summary() -> None:
    result = CliRunner().invoke(main, ["--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    text = result.output
    titles = [line for line in text.splitlines() if line.endswith("commands:")]
    assert titles == ["Chat commands:", "Conversations commands:", "Approvals commands:", "Server commands:",
                      "Database commands:"]
    rows = [line for line in text.split("Chat commands:", 1)[1].splitlines() if line.startswith("  ")]
    names = [row.split()[0] for row in rows]
    assert sorted(names) == sorted(main.list_commands(None))  # type: ignore[arg-type]
    assert len(names) == len(set(names))
    for row in rows:
        assert len(row) <= 80 and not row.rstrip().endswith("..."), row  # one line, not cut
    section = text.split("Chat commands:", 1)[1].split("Conversations commands:", 1)[0]
    assert {"chat", "repl", "resume"} <= set(section.split())
