"""Asking a person at the terminal about tool calls that wait for approval: per call
`[a]pprove / [e]dit / [r]eject / [A]lways`; edit opens $EDITOR on the JSON arguments."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Sequence
from typing import Any

import click

CHOICES = ("a", "e", "r", "A")  # A (always) differs from a (once): the case matters


def on_terminal(as_json: bool) -> bool:
    """Ask only a person: stdin and stderr a terminal, and no `--json` (a program reads it)."""
    return not as_json and sys.stdin.isatty() and sys.stderr.isatty()


def decide(calls: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]] | None:
    """One decision per call, in the `decisions` format of a resume; None when the person
    leaves the questions (Ctrl-D or Ctrl-C): the calls keep waiting."""
    try:
        return {call["id"]: decide_one(call) for call in calls}
    except click.Abort:
        click.echo("", err=True)
        return None


def decide_one(call: dict[str, Any]) -> dict[str, Any]:
    args = json.dumps(call.get("args") or {}, ensure_ascii=False)
    server = f" on {call['server']}" if call.get("server") else ""
    click.secho(f"\nRun {call.get('name')}{server} with {args}?", fg="yellow", bold=True, err=True)
    if call.get("description"):
        click.echo(f"  {call['description']}", err=True)
    while True:
        choice = click.prompt(
            "  [a]pprove / [e]dit / [r]eject / [A]lways", type=click.Choice(CHOICES), show_choices=False, err=True
        )
        if choice == "a":
            return {"type": "approve"}
        if choice == "A":
            return {"type": "approve", "always": True}
        if choice == "r":
            reason = click.prompt("  reason (the model is told)", default="", show_default=False, err=True)
            return {"type": "reject", "message": reason.strip() or "Rejected without a reason"}
        edited = edit_args(call)
        if edited is not None:
            return {"type": "edit", "args": edited}


def editor() -> str:
    """$EDITOR, else $VISUAL, else vi or nano. Not click's own choice: it tries Debian's
    sensible-editor first, which asks the person to pick an editor in the middle of a question."""
    for variable in ("EDITOR", "VISUAL"):
        if os.environ.get(variable, "").strip():
            return os.environ[variable]
    return next((name for name in ("vi", "nano") if shutil.which(name)), "vi")


def edit_args(call: dict[str, Any]) -> dict[str, Any] | None:
    """The arguments as the person left them in the editor; None (ask again) when unchanged
    or not a JSON object. Unchanged means the same JSON: saving the file as it was (or
    re-indenting it) is not an edit."""
    original = call.get("args") or {}
    text = click.edit(json.dumps(original, indent=2, ensure_ascii=False) + "\n", editor=editor(), extension=".json")
    if text is None:
        click.echo("  the arguments were not changed; choose again", err=True)
        return None
    try:
        args = json.loads(text)
    except ValueError as e:
        click.echo(f"  not valid JSON ({e}); choose again", err=True)
        return None
    if not isinstance(args, dict):
        click.echo('  the arguments must be a JSON object, like {"amount": 5}; choose again', err=True)
        return None
    if args == original:
        click.echo("  the arguments were not changed; choose again", err=True)
        return None
    return args
