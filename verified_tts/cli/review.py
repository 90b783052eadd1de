"""``verified-tts review OUT``: parses the options and serves the review (verified_tts.review)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from verified_tts.cli.report import console

__all__ = ["app"]

app = typer.Typer()


@app.command("review")
def review_command(
    out_dir: Annotated[
        Path, typer.Argument(help="Output folder of a render or a dub.", show_default=False)
    ],
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (only this machine by default).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port (0: any free port).")
    ] = 0,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the address; do not open a browser.")
    ] = False,
    reviewer: Annotated[
        str | None, typer.Option("--reviewer", help="Name recorded with each decision.")
    ] = None,
    no_wait: Annotated[
        bool, typer.Option("--no-wait", help="Refuse, not wait, while a render runs on OUT.")
    ] = False,
) -> None:
    """Review a render worst-first in the browser: choose takes, fix lines, deliver."""
    from verified_tts.review.server import ReviewOptions, serve

    options = ReviewOptions(host=host, port=port, open_browser=not no_browser,
                            reviewer=reviewer, wait=not no_wait)  # fmt: skip
    try:
        serve(
            out_dir,
            options,
            say=lambda line: console.print(escape(line), soft_wrap=True, highlight=False),
        )
    except KeyboardInterrupt:
        console.print("[yellow]stopped:[/] every decision is saved in the output folder")
