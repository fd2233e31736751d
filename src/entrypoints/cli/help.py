"""`sophos --help`: the commands in groups, each with its whole one-line summary."""

from __future__ import annotations

import click

# every command of the group is in one section; a command missing here goes under "other"
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Chat", ("chat", "repl", "resume", "regenerate", "cancel", "schedule", "models")),
    ("Conversations", ("conversations", "show", "search", "branch", "rename", "delete", "export", "import")),
    ("Approvals", ("approve", "approvals")),
    ("Memory", ("memory", "knowledge")),
    ("Server", ("serve", "doctor", "users", "usage", "audit", "graphs")),
    ("Database", ("db",)),
)


# where the first paragraph of a command's help is longer than a line
SUMMARIES = {
    "chat": "Send a message and stream the answer as it comes.",
    "repl": "Chat in a loop: line editing, history, /help for commands.",
    "regenerate": "Answer the last user message again, on a new branch.",
    "cancel": "Stop a conversation's running run, wherever it runs.",
    "search": 'Search titles and messages: words, "a phrase", prefix*.',
    "branch": "Make another branch of a conversation the active one.",
    "delete": "Delete a conversation and everything of it (asks first).",
    "export": "Export a conversation (or --all) as JSON, Markdown or JSONL.",
    "import": "Add conversations from a Sophos or ChatGPT export file.",
    "approve": "Approve, edit or reject the calls a conversation waits on.",
    "approvals": "List or revoke the tools you always allow.",
    "memory": "List or forget what the agent remembers about you.",
    "doctor": "Check the model server, every tool server and the database.",
    "models": "List the models the model server serves (* marks the default).",
    "db": "Inspect and maintain the database (SQLite, or PostgreSQL).",
    "graphs": "List the graphs of the langgraph.json (LANGGRAPH_JSON).",
    "schedule": "Send a message at set times (fired by sophos serve).",
}


def summary(name: str, command: click.Command) -> str:
    """One line: ours, or the first paragraph of the command's help, never cut (click cuts
    it at 45 characters)."""
    return SUMMARIES.get(name) or command.get_short_help_str(limit=1000)


def format_sections(group: click.Group, ctx: click.Context, formatter: click.HelpFormatter) -> None:
    commands = {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}
    visible = {name: c for name, c in commands.items() if c is not None and not c.hidden}
    width = max((len(name) for name in visible), default=0)  # one column for every section
    placed: set[str] = set()
    for title, names in (*SECTIONS, ("Other", tuple(visible))):
        chosen = [name for name in names if name in visible and name not in placed]
        placed.update(chosen)
        rows = [(name.ljust(width), summary(name, visible[name])) for name in chosen]
        if rows:
            with formatter.section(f"{title} commands"):
                formatter.write_dl(rows)
