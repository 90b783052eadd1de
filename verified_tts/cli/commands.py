"""The ``verified-tts`` root app: every command, mounted one way, and the console entry point.

Each topic module holds a typer app of its own commands (``render``, ``dub``, ``ab``, ...);
:data:`COMMANDS` lists them and the root mounts each with ``add_typer``, the command groups
(``cluster``, ``jobs``) under their names. Every command turns a
:class:`~verified_tts.errors.UserError` into one red line on stderr and a non-zero exit, and an
interrupt into a line saying the finished work is kept and how to resume.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.markup import escape

from verified_tts.cli import (
    ab,
    calibrate,
    cast,
    dub,
    outputs,
    production,
    render,
    review,
    serve,
    voices,
)
from verified_tts.cli.cluster import cluster_app
from verified_tts.cli.jobs import jobs_app
from verified_tts.cli.report import console
from verified_tts.errors import UserError

__all__ = ["COMMANDS", "GROUPS", "app", "main"]

app = typer.Typer(
    name="verified-tts",
    help="Best-of-N verifier-guided text-to-speech for audiobooks and dubbing.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# the modules whose commands sit at the top level, in the order `--help` lists them; Ray,
# Starlette and the models are imported only inside the commands that need them
COMMANDS = (render, dub, ab, outputs, calibrate, production, voices, cast, review, serve)
GROUPS = {"cluster": cluster_app, "jobs": jobs_app}


def _version(value: bool) -> None:
    if value:
        from verified_tts import __version__

        typer.echo(f"verified-tts {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print version.")
    ] = False,
) -> None:
    """Best-of-N verifier-guided text-to-speech for audiobooks and dubbing."""


for _module in COMMANDS:
    app.add_typer(_module.app)
for _name, _group in GROUPS.items():
    app.add_typer(_group, name=_name)


def main() -> None:
    """Console-script entry point: user errors become one line and exit code 2."""
    try:
        app()
    except UserError as error:
        console.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
        sys.exit(error.exit_code)
    except KeyboardInterrupt:  # outside a command (e.g. while importing): nothing to keep
        console.print("[yellow]interrupted[/]")
        sys.exit(130)
