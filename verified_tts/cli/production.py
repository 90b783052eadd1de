"""``check``, ``words``, ``pronounce`` and ``chapters``: the producer's commands beside ``render``.

``verified-tts check FILES_OR_DIR`` measures audio files (ours or a producer's own recordings)
against ACX and prints one row per file, exiting 1 when any fails. ``verified-tts words BOOK``
lists what to check before a long render: tokens the normaliser left unexpanded, and rare and
proper words, with counts and a first example. ``verified-tts pronounce BOOK --out FILE``
decides once how each doubtful word of the book is read and writes it as a lexicon.
``verified-tts chapters BOOK`` lists the chapters
a render would make (number, title, words), so ``--chapters`` and ``--toc-depth`` can be chosen,
with what the EPUB reader left out and the warnings about the book's own pronunciations. With
``--json`` each prints its result as one JSON object on stdout instead; ``--json-out FILE`` also
writes it to a file (the old ``--json FILE``). All only parse options and call the library.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from verified_tts.cli.report import JsonFileCompat, JsonOption, JsonOutOption, Report, console, warn
from verified_tts.cli.tables import copy_table

__all__ = ["app"]

app = typer.Typer()


@app.command("check", cls=JsonFileCompat)
def check_command(
    paths: Annotated[
        list[Path], typer.Argument(help="Audio files or folders.", show_default=False)
    ],
    as_json: JsonOption = False,
    json_out: JsonOutOption = None,
) -> None:
    """Check audio files against ACX: RMS, peak, noise floor, room tone, length, MP3 format."""
    from dataclasses import asdict

    from verified_tts.output.acx import AcxLimits, check_paths

    report = Report(as_json, json_out)
    with report.errors():
        results = check_paths(paths)

    def human() -> None:
        columns = ("file", "RMS dB", "peak dB", "floor dB", "head s", "tail s", "min", "")
        right = [c for c in columns if c not in ("file", "")]
        table = copy_table("ACX check", columns, keys=("file",), right=right)
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

    passed = all(r.passed for r in results)
    report.emit(
        {"limits": asdict(AcxLimits()), "passed": passed, "files": [r.as_dict() for r in results]},
        human,
    )
    if not passed:
        raise typer.Exit(1)


@app.command("words", cls=JsonFileCompat)
def words_command(
    book: Annotated[
        Path, typer.Argument(help="Markdown, plain-text or EPUB book.", show_default=False)
    ],
    lexicon: Annotated[
        Path | None, typer.Option("--lexicon", help="Mark words a lexicon already covers.")
    ] = None,
    top: Annotated[int, typer.Option("--top", min=1, help="Rows per list.")] = 40,
    as_json: JsonOption = False,
    json_out: JsonOutOption = None,
) -> None:
    """List unexpanded tokens and rare or proper words to check before a long render."""
    from verified_tts.options import ProductionOptions
    from verified_tts.text.production import load_input
    from verified_tts.text.words import list_words

    report = Report(as_json, json_out)
    with report.errors():
        loaded = load_input(book, ProductionOptions(lexicon=str(lexicon) if lexicon else None))
        words = list_words(loaded.book, lexicon=loaded.lexicon, top=top)

    def human() -> None:
        for title, rows, extra in (
            ("left unexpanded by the normaliser", words.unexpanded, "why"),
            ("rare and proper words (Zipf < 3)", words.rare, "zipf"),
        ):
            columns = ("word", "count", extra, "lexicon", "first example")
            table = copy_table(title, columns, keys=("word",))
            for row in rows:
                table.add_row(
                    escape(row.word),
                    str(row.count),
                    row.why if extra == "why" else f"{row.zipf:.2f}",
                    "yes" if row.in_lexicon else "",
                    escape(row.example[:90]),
                )
            console.print(table)

    report.emit(words.as_dict(), human)


@app.command("pronounce", cls=JsonFileCompat)
def pronounce_command(
    book: Annotated[
        Path, typer.Argument(help="Markdown, plain-text or EPUB book.", show_default=False)
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Lexicon TOML to write.")],
    lexicon: Annotated[
        Path | None, typer.Option("--lexicon", help="Your own lexicon: its words always win.")
    ] = None,
    top: Annotated[int, typer.Option("--top", min=1, help="Most doubtful words to decide.")] = 200,
    seeds: Annotated[int, typer.Option("--seeds", min=1, help="Takes per reading.")] = 2,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing --out lexicon.")
    ] = False,
    as_json: JsonOption = False,
    json_out: JsonOutOption = None,
) -> None:
    """Decide once per book how each doubtful word is read; write it as a lexicon."""
    from verified_tts.pronounce.decide import DecideOptions
    from verified_tts.pronounce.workflow import pronounce_book

    report = Report(as_json, json_out)
    with report.errors():
        result = pronounce_book(
            book, out, lexicon=lexicon, options=DecideOptions(top=top, seeds=seeds), force=force
        )

    def human() -> None:
        changed = [d for d in result.decisions if d.changed]
        console.print(
            f"{len(result.decisions)} doubtful words checked, {len(changed)} read another way "
            f"({result.seconds:.0f} s): {escape(str(result.lexicon))}; evidence "
            f"{escape(str(result.evidence))}. Render with --lexicon {escape(str(result.lexicon))}."
        )
        for d in changed:
            console.print(f"  {escape(d.word)}: {d.chosen} ({escape(', '.join(d.chosen_sources))})")

    report.emit(result.as_dict(), human)


@app.command("chapters", cls=JsonFileCompat)
def chapters_command(
    book: Annotated[
        Path, typer.Argument(help="Markdown, plain-text or EPUB book.", show_default=False)
    ],
    toc_depth: Annotated[
        int | None,
        typer.Option(
            "--toc-depth",
            help="EPUB: cut chapters at this depth of the table of contents (1 = top; "
            "default: the level that splits the book into chapter-sized parts).",
        ),
    ] = None,
    keep_extras: Annotated[
        bool,
        typer.Option(
            "--keep-extras/--skip-extras",
            help="Also read front matter and notes (EPUB; in plain text, the title page, "
            "dedication and what follows THE END).",
        ),
    ] = False,
    skipped: Annotated[
        bool, typer.Option("--skipped", help="Also list what the EPUB reader left out.")
    ] = False,
    as_json: JsonOption = False,
    json_out: JsonOutOption = None,
) -> None:
    """List the chapters a render would make (number, title, words) to choose --chapters."""
    from verified_tts.options import ProductionOptions
    from verified_tts.text.production import list_chapters, load_input

    report = Report(as_json, json_out)
    with report.errors():
        loaded = load_input(book, ProductionOptions(toc_depth=toc_depth, keep_extras=keep_extras))
        rows = list_chapters(loaded)

    def human() -> None:
        depth = ""
        if loaded.toc_depths:
            how = "chosen" if toc_depth is None else "asked"
            if toc_depth is not None and loaded.toc_depth != toc_depth:
                how = f"{toc_depth} asked, the deepest there is"
            depth = f" at TOC depth {loaded.toc_depth} ({how}; the TOC has depths "
            depth += f"{', '.join(map(str, loaded.toc_depths))})"
        table = copy_table(
            f"{len(rows)} chapters{depth}",
            ("#", "title", "words"),
            keys=("#",),
            right=("#", "words"),
        )
        for row in rows:
            table.add_row(str(row.number), escape(row.title or ""), str(row.words))
        console.print(table)
        console.print(
            f"{sum(row.words for row in rows)} words; render some with --chapters, e.g. "
            f"--chapters 1-{min(len(rows), 3)}"
        )
        if skipped:
            for line in loaded.skipped:
                console.print(f"left out: {escape(line)}", highlight=False)
        elif loaded.skipped:
            console.print(f"{len(loaded.skipped)} lines of left-out matter: see --skipped")
        for warning in loaded.warnings:
            warn(warning)

    report.emit(
        {
            "book": str(book),
            "toc_depth": loaded.toc_depth,
            "toc_depths": list(loaded.toc_depths),
            "chapters": [row.as_dict() for row in rows],
            "skipped": list(loaded.skipped),
            "warnings": list(loaded.warnings),
        },
        human,
    )
