"""The ``jaxzero`` Typer app and how every command reports a mistake: one ``error:``
line on stderr, exit code 2, never a traceback."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup


class _OneLineErrors(TyperGroup):
    """Usage errors (an unknown option, a value of the wrong type or range) as one
    ``error:`` line naming the command's help, exit code 2, like every other error."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            result = super().main(
                args, prog_name, complete_var, False, windows_expand_args, **extra
            )
        except typer.TyperException as error:
            if not standalone_mode:
                raise
            context = getattr(error, "ctx", None)
            command = context.command_path if context is not None else "jaxzero"
            message = " ".join(error.format_message().split())
            if message:  # (none when the help was shown for a bare command)
                print_error(f"{message} (see `{command} --help`)")
            sys.exit(getattr(error, "exit_code", 2))
        except typer.Abort:
            if not standalone_mode:
                raise
            sys.exit(130)
        if standalone_mode:
            sys.exit(result if isinstance(result, int) else 0)
        return result


app = typer.Typer(
    cls=_OneLineErrors,
    pretty_exceptions_enable=False,
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,  # help text as written: "[default: runs/GAME]" is no markup tag
    help="jaxzero: AlphaZero in JAX. Train an agent, play against it, measure it.",
)
console = Console(stderr=True, soft_wrap=True)  # piped or logged: no break mid-phrase


@app.callback()
def _commands(
    compile_cache: Annotated[
        str | None,
        typer.Option(
            help="Folder of JAX's persistent compilation cache, or 'off' [default: "
            "$JAXZERO_COMPILE_CACHE, else ~/.cache/jaxzero/xla]",
        ),
    ] = None,
) -> None:
    """jaxzero: AlphaZero in JAX. Train an agent, play against it, measure it."""
    from jaxzero.run.life.compile_cache import enable_compile_cache

    # orbax logs each failure it then raises, with tracebacks; the raised error is
    # reported here in one line, so its log is noise to a user of the command line.
    logging.getLogger("absl").setLevel(logging.CRITICAL)
    try:
        enable_compile_cache(compile_cache)  # a second identical run reads its programs back
    except ValueError as error:
        fail(str(error))


class UsageError(Exception):
    """A mistake the user can fix; printed as one line."""


def print_error(message: str) -> None:
    """``message`` as one ``error:`` line on stderr."""
    console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def fail(message: str) -> NoReturn:
    """Print ``message`` as one ``error:`` line and exit with 2."""
    print_error(message)
    raise typer.Exit(2)


def main() -> None:
    """Run the command line; Ctrl-C before a command handles it exits with 130."""
    from jaxzero.run.life import signals

    signals.install()  # (already, when started as `jaxzero`: jaxzero.entry)
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
