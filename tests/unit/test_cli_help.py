"""`sophos --help` groups the commands, each with a whole one-line summary."""

from __future__ import annotations

from click.testing import CliRunner

from entrypoints.cli import main


def test_help_lists_every_command_once_in_its_group_with_an_uncut_summary() -> None:
    result = CliRunner().invoke(main, ["--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    text = result.output
    titles = [line for line in text.splitlines() if line.endswith("commands:")]
    assert titles == [
        "Chat commands:",
        "Conversations commands:",
        "Approvals commands:",
        "Memory commands:",
        "Server commands:",
        "Database commands:",
    ]
    rows = [line for line in text.split("Chat commands:", 1)[1].splitlines() if line.startswith("  ")]
    names = [row.split()[0] for row in rows]
    assert sorted(names) == sorted(main.list_commands(None))  # type: ignore[arg-type]
    assert len(names) == len(set(names))
    for row in rows:
        assert len(row) <= 80 and not row.rstrip().endswith("..."), row  # one line, not cut
    section = text.split("Chat commands:", 1)[1].split("Conversations commands:", 1)[0]
    assert {"chat", "repl", "resume"} <= set(section.split())


def options_of(*command: str) -> set[str]:
    result = CliRunner().invoke(main, [*command, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return {word.rstrip(",") for line in result.output.splitlines() for word in line.split() if word.startswith("-")}


def test_a_commands_help_lists_only_the_options_it_uses() -> None:
    chatting = {"--db", "--backend", "-m", "--model", "-s", "--system", "--no-reasoning", "--tools", "-v"}
    assert chatting <= options_of("chat")
    assert chatting <= options_of("approve")
    for command in (
        ("users", "add"),
        ("users", "list"),
        ("conversations",),
        ("rename",),
        ("export",),
        ("search",),
        ("db", "stats"),
        ("approvals", "list"),
    ):
        got = options_of(*command)
        assert "--db" in got and "-v" in got, command
        assert not got & {"--backend", "--model", "--system", "--no-reasoning", "--tools"}, (command, got)
    assert {"--backend", "--tools"} <= options_of("serve") and "--model" not in options_of("serve")
    assert "--no-reasoning" in options_of("show") and "--model" not in options_of("show")
    assert "--backend" in options_of("models")


def test_every_command_that_reads_conversations_takes_dash_dash_server() -> None:
    for command in (("search",), ("conversations",), ("show",), ("branch",), ("rename",), ("export",), ("cancel",)):
        assert "--server" in options_of(*command), command
