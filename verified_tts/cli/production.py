"""``check`` and ``words``: the producer's commands beside ``render``.

``verified-tts check FILES_OR_DIR`` measures audio files (ours or a producer's own recordings)
against ACX and prints one row per file, exiting 1 when any fails. ``verified-tts words BOOK``
lists what to check before a long render: tokens the normaliser left unexpanded, and rare and
proper words, with counts and a first example. Both only parse options and call the library.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = ["register_production_commands"]


def register_production_commands(app: typer.Typer, console: Console) -> None:
    """Add ``check`` and ``words`` to the CLI app."""

    @app.command("check")
    def check_command(
        paths: Annotated[
            list[Path], typer.Argument(help="Audio files or folders.", show_default=False)
        ],
        json_out: Annotated[
            Path | None, typer.Option("--json", help="Also write the results as JSON here.")
        ] = None,
    ) -> None:
        """Check audio files against ACX: RMS, peak, noise floor, room tone, length, MP3 format."""
        from verified_tts.output.acx import AcxLimits, check_paths

        results = check_paths(paths)
        table = Table(title="ACX check")
        for column in ("file", "RMS dB", "peak dB", "floor dB", "head s", "tail s", "min", ""):
            table.add_column(column, justify="left" if column in ("file", "") else "right")
        for r in results:
            table.add_row(
                escape(r.path),
                f"{r.rms_db:.1f}",
                f"{r.peak_db:.1f}",
                f"{r.noise_floor_db:.1f}",
                f"{r.head_s:.2f}",
                f"{r.tail_s:.2f}",
                f"{r.duration_s / 60:.1f}",
                "[green]pass[/]" if r.passed else f"[red]FAIL[/] {escape('; '.join(r.failures))}",
            )
        console.print(table)
        if json_out:
            from dataclasses import asdict

            data = {
                "limits": asdict(AcxLimits()),
                "passed": all(r.passed for r in results),
                "files": [r.as_dict() for r in results],
            }
            json_out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        if not all(r.passed for r in results):
            raise typer.Exit(1)

    @app.command("words")
    def words_command(
        book: Annotated[
            Path, typer.Argument(help="Markdown, plain-text or EPUB book.", show_default=False)
        ],
        lexicon: Annotated[
            Path | None, typer.Option("--lexicon", help="Mark words a lexicon already covers.")
        ] = None,
        top: Annotated[int, typer.Option("--top", help="Rows per list.")] = 40,
        json_out: Annotated[
            Path | None, typer.Option("--json", help="Also write the lists as JSON here.")
        ] = None,
    ) -> None:
        """List unexpanded tokens and rare or proper words to check before a long render."""
        from verified_tts.config import ProductionOptions
        from verified_tts.text.production import load_input
        from verified_tts.text.words import list_words

        loaded = load_input(book, ProductionOptions(lexicon=str(lexicon) if lexicon else None))
        report = list_words(loaded.book, lexicon=loaded.lexicon, top=top)
        for title, rows, extra in (
            ("left unexpanded by the normaliser", report.unexpanded, "why"),
            ("rare and proper words (Zipf < 3)", report.rare, "zipf"),
        ):
            table = Table(title=title)
            for column in ("word", "count", extra, "lexicon", "first example"):
                table.add_column(column)
            for row in rows:
                table.add_row(
                    escape(row.word),
                    str(row.count),
                    row.why if extra == "why" else f"{row.zipf:.2f}",
                    "yes" if row.in_lexicon else "",
                    escape(row.example[:90]),
                )
            console.print(table)
        if json_out:
            json_out.write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
