"""``verified-tts render BOOK``: a book to chapter audio by best-of-N synthesis.

It parses the book's options into ``[production]`` keys, merges them with the shared options
(:mod:`verified_tts.cli.options`) over ``--config`` and calls
:func:`verified_tts.workflows.render.render`; the summary table is all it adds.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from jobs.progress import job_progress
from verified_tts.cli.options import SynthesisArgs, synthesis_options
from verified_tts.cli.report import RunProgress, console, interruptible, warn
from verified_tts.cli.runs import add_run_rows, print_damaged, ray_synthesizer
from verified_tts.output.run_manifest import judged_comparison_hint, selection_lines

__all__ = ["OutOption", "RUN_OPTIONS", "app"]

app = typer.Typer()

OutOption = Annotated[
    Path | None, typer.Option("--out", "-o", help="Output folder (default: out/<input name>).")
]
# the shared options of a command that runs the pipeline on a whole input (render, dub)
RUN_OPTIONS = (
    "candidates", "generator", "model", "codec", "voice", "voice_ref", "voice_ref_text", "seed",
    "adaptive", "config", "keep", "ray",
)  # fmt: skip


def _print_summary(summary, book: str) -> None:  # summary: RenderSummary
    print_damaged(summary)
    table = Table(title=f"rendered into {summary.out_dir}", show_header=False)
    table.add_row("utterances", str(summary.utterances))
    table.add_row("flagged (no candidate passed the gates)", str(summary.flagged))
    table.add_row("passed the gates", f"{summary.passed_share:.0%}")
    stats = {
        "utterances": summary.utterances,
        "lines_take_changed": summary.lines_take_changed,
        "lines_more_takes": summary.lines_more_takes,
        "more_takes_because": summary.more_takes_because,
    }
    for label, value in selection_lines(stats):
        table.add_row(label, escape(value))
    if summary.one_take_voices:
        voices = ", ".join(summary.one_take_voices)
        table.add_row(  # Text: a voice name such as hibari:heart is no emoji code
            "one take a line",
            Text(
                f"{voices} (takes that differ only in signal noise: more would change nothing; "
                "seeded variation makes them differ: docs/voices.md)"
            ),
        )
    add_run_rows(table, summary)
    console.print(table)
    console.print(escape(judged_comparison_hint(book)), soft_wrap=True)


@app.command("render")
@synthesis_options(*RUN_OPTIONS, "search", "budget")
def render(
    book: Annotated[
        Path,
        typer.Argument(
            help="Markdown (.md), plain-text (.txt, Project Gutenberg style) or EPUB (.epub) book.",
            show_default=False,
        ),
    ],
    synthesis: SynthesisArgs,
    out: OutOption = None,
    output_format: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="wav, flac, m4b (AAC with chapters), mp3 (ACX: 192 kbps CBR, one file per "
            "chapter), epub3 (read-along EPUB with media overlays), srt, vtt (captions per "
            "chapter); comma-separated (default wav,flac).",
        ),
    ] = None,
    chapters: Annotated[
        str | None,
        typer.Option(
            "--chapters", help="Render only these chapters (1-based, as listed), e.g. 3-7."
        ),
    ] = None,
    lexicon: Annotated[
        Path | None, typer.Option("--lexicon", help="Pronunciation lexicon (TOML).")
    ] = None,
    cast: Annotated[
        Path | None,
        typer.Option(
            "--cast",
            help="Cast file (verified-tts cast): dialogue in each character's voice; the "
            "narrator's voice is the render's unless --voice says otherwise.",
        ),
    ] = None,
    credits: Annotated[
        bool | None,
        typer.Option("--credits/--no-credits", help="Opening and closing credits chapters."),
    ] = None,
    narrator: Annotated[
        str | None, typer.Option("--narrator", help="Narrator's name (tags, credits).")
    ] = None,
    author: Annotated[str | None, typer.Option("--author", help="Author (tags, credits).")] = None,
    keep_extras: Annotated[
        bool | None,
        typer.Option(
            "--keep-extras/--skip-extras",
            help="EPUB and .txt: read front matter, notes and what follows THE END.",
        ),
    ] = None,
    split_hours: Annotated[
        float | None, typer.Option("--split-hours", help="M4B parts of at most H hours.")
    ] = None,
    toc_depth: Annotated[
        int | None,
        typer.Option(
            "--toc-depth",
            help="EPUB: chapters at this depth of the table of contents (1 = top; default: the "
            "level that splits the book into chapter-sized parts; see `verified-tts chapters`).",
        ),
    ] = None,
    language_override: Annotated[
        str | None,
        typer.Option(
            "--language-override",
            help="Read the book as this language (BCP 47, e.g. en) whatever its dc:language "
            "says; a book in a language the voice does not speak is refused without it.",
        ),
    ] = None,
    read_along: Annotated[
        str | None,
        typer.Option(
            "--read-along",
            help="sentences (default) or words: what the epub3 highlights and timings.json times.",
        ),
    ] = None,
    epub_audio: Annotated[
        str | None,
        typer.Option("--epub-audio", help="Audio inside book.epub: aac (default) or mp3."),
    ] = None,
) -> None:
    """Render a Markdown, plain-text or EPUB book to chapter audio by best-of-N synthesis."""
    from verified_tts.workflows.render import render as render_book

    if cast is not None and synthesis.voice is None:
        from verified_tts.cast import read_cast

        narrator_voice = read_cast(cast, voices_dir=synthesis.table().get("voices_dir")).narrator
        synthesis = replace(synthesis, voice=narrator_voice)
    settings = synthesis.settings(
        production={
            "formats": output_format,
            "chapters": chapters,
            "lexicon": str(lexicon) if lexicon else None,
            "cast": str(cast) if cast else None,
            "credits": credits,
            "narrator": narrator,
            "author": author,
            "keep_extras": keep_extras,
            "split_hours": split_hours,
            "toc_depth": toc_depth,
            "language_override": language_override,
            "read_along": read_along,
            "epub_audio": epub_audio,
        }
    )
    out = out or Path("out") / book.stem
    progress = RunProgress("rendering", settings.generator.name, job_progress(out))
    with interruptible(progress):
        summary = render_book(
            book,
            out,
            settings,
            synthesizer=ray_synthesizer(settings, synthesis.ray),
            **progress.callbacks(),
        )
    _print_summary(summary, str(book))
    for warning in summary.warnings:
        warn(warning)
    console.print(f"manifest: {summary.out_dir / 'manifest.json'}")
    console.print(f"ACX check: {summary.out_dir / 'acx.json'}")
