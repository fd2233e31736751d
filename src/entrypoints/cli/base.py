"""What every command shares: the lazily built container, global options, errors and exit codes."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from domain.errors import SophosError
from entrypoints.cli.client import RemoteError, SophosClient
from entrypoints.cli.exits import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_SERVER, exit_code_of
from entrypoints.cli.hints import for_cli
from entrypoints.logs import configure_logging
from entrypoints.settings import SettingsError

if TYPE_CHECKING:
    from entrypoints.bundle import Services
    from entrypoints.container import Container
    from entrypoints.settings import Settings

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


class CliError(click.ClickException):
    """An expected failure: one line on stderr, a meaningful exit code."""

    def __init__(self, code: str, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(f"{code}: {message}")
        self.exit_code = exit_code  # type: ignore[misc]  # click reads it per instance

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {for_cli(self.message)}", err=True)


def fail(e: SophosError | RemoteError) -> CliError:
    """The one line and exit code for a refusal, ours or a server's."""
    if isinstance(e, RemoteError):
        return CliError(e.code, e.message, EXIT_SERVER if e.code == "UNREACHABLE" else exit_code_of(e.code))
    return CliError(e.code.value, e.message, exit_code_of(e.code.value))


def finish(code: int) -> NoReturn:
    """End the command with an exit code (click's way, so the group's handling applies)."""
    click.get_current_context().exit(code)
    raise AssertionError("unreachable")  # Context.exit raises


class Context:
    """Builds the container lazily, so `--help` and bad options open nothing."""

    def __init__(self) -> None:
        self.overrides: dict[str, Any] = {"METRICS_BACKEND": "none"}  # only `serve` is scraped
        self.options: dict[str, str] = {}  # the global options as given, for hints
        self.chat: dict[str, str | None] = {}  # `model`, `system`, `systemMode` a run's body asks for (-m, -s)
        self.show_reasoning = True  # --no-reasoning hides the model's thinking
        self.verbose = False
        self._container: Container | None = None

    @property
    def container(self) -> Container:
        """Imported and built on first use: `--help` never loads dependency-injector."""
        if self._container is None:
            from entrypoints.container import create_container

            try:
                self._container = create_container(**self.overrides)
            except SettingsError as e:
                raise CliError("BAD_CONFIG", str(e), EXIT_BAD_INPUT) from None
        return self._container

    @property
    def settings(self) -> Settings:
        return self.container.settings()

    @property
    def services(self) -> Services:
        """The use cases and ports a command may use (built once, each on first use)."""
        return self.container.services()

    def run(self, coro: Callable[[], Awaitable[T]]) -> T:
        """Run a coroutine, then close tools and database (commands on this machine only)."""
        from entrypoints.container import close_container

        async def main() -> T:
            try:
                return await coro()
            finally:
                await close_container(self.container)

        act_locally()
        try:
            return asyncio.run(main())
        except SophosError as e:
            raise fail(e) from None

    def hint_options(self) -> str:
        """The global options this command was given, to repeat in a suggested command."""
        return "".join(f" {flag} {value}" for flag, value in self.options.items())

    def call(self, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except SophosError as e:
            raise fail(e) from None

    def client(self, server: str | None) -> SophosClient:
        """The server's client with `--server`, else this machine's database."""
        if server:
            from entrypoints.cli.remote import HttpClient

            return HttpClient(server, api_token())
        from entrypoints.cli.local import LocalClient

        act_locally()
        return LocalClient(self.services, self.container)

    def with_client(self, work: Callable[[SophosClient], Awaitable[T]], server: str | None = None) -> T:
        """Do a command's work with a client, then close what it opened."""
        client = self.client(server)

        async def main() -> T:
            try:
                return await work(client)
            finally:
                await client.aclose()

        try:
            return asyncio.run(main())
        except (SophosError, RemoteError) as e:
            raise fail(e) from None


def act_locally() -> None:
    """This machine's commands act as the bootstrap admin, from `cli:<os user>` (the audit log)."""
    import getpass

    from domain.audit import Caller
    from domain.principals import BOOTSTRAP_ID
    from services.audit import acting

    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # no name for this uid (a container's arbitrary user)
        user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
    acting(Caller(BOOTSTRAP_ID, f"cli:{user}"))


pass_ctx = click.make_pass_decorator(Context, ensure=True)

_SETTINGS = {
    "database": ("DATABASE_PATH", "--db"),
    "backend": ("MODEL_BACKEND", "--backend"),
    "tools": ("TOOLS_BACKEND", "--tools"),
}
BACKENDS = ("ollama", "openai", "demo")


def _set(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    if value is None or value is False or param.name is None:
        return
    obj = ctx.ensure_object(Context)
    if param.name == "verbose":
        obj.verbose = True
        configure_logging("INFO")
        return
    if param.name == "no_reasoning":
        obj.show_reasoning = False
        return
    if param.name == "system":
        obj.chat["system"] = value
        return
    if param.name == "replace_system":
        obj.chat["systemMode"] = "replace"
        return
    name = param.name
    if name == "model":
        if value not in BACKENDS:
            obj.chat["model"] = value
            return
        # the old spelling, when --model picked the backend: it still does, for these three names
        click.echo(
            f"note: `--model {value}` picks the backend; say `--backend {value}` "
            "(--model now names the model, e.g. `--model llama3.2`)",
            err=True,
        )
        name = "backend"
    setting, flag = _SETTINGS[name]
    obj.overrides[setting] = value
    obj.options[flag] = value


def api_token() -> str | None:
    """The token `--server` requests send: SOPHOS_TOKEN (a user's token), else the server's
    own API_TOKEN setting."""
    return os.environ.get("SOPHOS_TOKEN") or os.environ.get("API_TOKEN") or None


server_option = click.option("--server", metavar="URL", help="Use a running server instead of the database file.")


_OPTIONS: dict[str, Callable[[Any], Any]] = {
    "db": click.option(
        "--db", "database", metavar="PATH", callback=_set, expose_value=False, help="SQLite file (DATABASE_PATH)."
    ),
    "backend": click.option(
        "--backend", type=click.Choice(BACKENDS), callback=_set, expose_value=False, help="Model backend (MODEL_BACKEND)."
    ),
    "model": click.option(
        "-m",
        "--model",
        metavar="NAME",
        callback=_set,
        expose_value=False,
        help="The model to answer with, from this turn on (`sophos models` lists them).",
    ),
    "system": click.option(
        "-s",
        "--system",
        metavar="TEXT",
        callback=_set,
        expose_value=False,
        help='The conversation\'s instructions, after config/system.md, from this turn on ("": none).',
    ),
    "replace_system": click.option(
        "--replace-system",
        is_flag=True,
        callback=_set,
        expose_value=False,
        help="Its instructions replace config/system.md instead of following it.",
    ),
    "no_reasoning": click.option(
        "--no-reasoning", is_flag=True, callback=_set, expose_value=False, help="Do not print the model's thinking."
    ),
    "tools": click.option(
        "--tools",
        type=click.Choice(["mcp", "demo", "none"]),
        callback=_set,
        expose_value=False,
        help="Tools backend (TOOLS_BACKEND).",
    ),
    "verbose": click.option("-v", "--verbose", is_flag=True, callback=_set, expose_value=False, help="Log progress to stderr."),
}


def options(*names: str) -> Callable[[F], F]:
    """The global options a command uses, also accepted after it (its `--help` lists only
    those); the group takes every one before the command. `--db` and `-v` always."""
    chosen = ["db", *names, "verbose"]
    unknown = set(chosen) - set(_OPTIONS)
    assert not unknown, unknown

    def apply(f: F) -> F:
        for name in reversed(chosen):
            f = _OPTIONS[name](f)
        return f

    return apply


# `--db`, `--backend`, `-m/--model`, `-s/--system`, `--no-reasoning`, `--tools`, `-v`: the
# group's, and those of a command that runs the agent
global_options = options("backend", "model", "system", "replace_system", "no_reasoning", "tools")
