"""`sophos`: the command line, thin over the use cases."""

from __future__ import annotations

import errno
import logging
import sys
from typing import Any

import click

from domain.errors import SophosError
from entrypoints.cli.approvals import approvals, approve
from entrypoints.cli.base import CliError, Context, fail, global_options
from entrypoints.cli.conversations import branch, conversations, delete, rename, show
from entrypoints.cli.db import db
from entrypoints.cli.doctor import doctor
from entrypoints.cli.exits import EXIT_PIPE, EXIT_STOPPED
from entrypoints.cli.graphs import graphs
from entrypoints.cli.help import format_sections
from entrypoints.cli.knowledge import knowledge
from entrypoints.cli.memory import memory
from entrypoints.cli.models import models
from entrypoints.cli.output import silence_output
from entrypoints.cli.repl import repl
from entrypoints.cli.runs import cancel, chat, regenerate, resume
from entrypoints.cli.schedules import schedule
from entrypoints.cli.serve import serve
from entrypoints.cli.transfer import export, import_
from entrypoints.cli.usage import audit, usage
from entrypoints.cli.users import users
from entrypoints.cli_search import reindex, search
from entrypoints.logs import configure_logging


class SophosGroup(click.Group):
    """click's standalone handling, but Ctrl-C is exit 130 without "Aborted!" and a closed
    stdout is a quiet exit 141 instead of a traceback."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.ClickException as e:
            e.show()
            code = e.exit_code
        except (KeyboardInterrupt, click.Abort):
            click.echo("", err=True)
            code = EXIT_STOPPED
        except OSError as e:
            if e.errno != errno.EPIPE:
                raise
            silence_output()
            code = EXIT_PIPE
        sys.exit(code if isinstance(code, int) else 0)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        format_sections(self, ctx, formatter)

    def invoke(self, ctx: click.Context) -> Any:
        """Never a traceback: an expected failure is one line (with its exit code), anything
        else one line naming it (the traceback only with -v)."""
        try:
            return super().invoke(ctx)
        except SophosError as e:
            raise fail(e) from None
        except (click.exceptions.Exit, click.ClickException, click.Abort, KeyboardInterrupt, OSError):
            raise
        except Exception as e:
            logging.getLogger("sophos.cli").info("unexpected failure", exc_info=e)  # shown with -v
            raise CliError("INTERNAL_ERROR", f"unexpected {type(e).__name__}: {e} (run with -v for details)") from None


@click.group(cls=SophosGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="sophos", prog_name="sophos", message="%(prog)s %(version)s")
@global_options
@click.pass_context
def main(ctx: click.Context) -> None:
    """Sophos: a local-first chat agent whose runs survive crashes.

    Options --db, --backend, -m/--model, -s/--system, --no-reasoning, --tools and -v also
    work after the command."""
    obj = ctx.ensure_object(Context)
    if not obj.verbose:
        # a person sees the outcome lines; warnings (and tool servers' chatter) are for -v
        configure_logging("ERROR")


for command in (
    chat,
    resume,
    regenerate,
    approve,
    approvals,
    cancel,
    repl,
    conversations,
    show,
    branch,
    export,
    import_,
    rename,
    delete,
    search,
    models,
    db,
    doctor,
    serve,
    users,
    usage,
    audit,
    graphs,
    memory,
    knowledge,
    schedule,
):
    main.add_command(command)
db.add_command(reindex)
