"""``cast``: the characters who speak in a book and a voice for each, written as ``cast.toml``.

``verified-tts cast BOOK`` reads the book with its dialogue found and attributed, prints the
characters with their line counts, gender where the text says it and suggested voice, and writes
``cast.toml`` (:mod:`verified_tts.cast`) for the producer to edit (``--explain`` also lists every
quote with who says it and the rule that decided; ``--threshold`` is the confidence below which
a guess goes to the dialogue voice, recorded in the cast file); ``verified-tts render BOOK
--cast cast.toml`` then speaks each character's lines in their voice, attributed with the same
threshold. It never overwrites a cast
file, which holds the producer's choices, unless ``--force`` says so. It only parses options and
calls the library.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from verified_tts.cli.options import ConfigOption, config_table
from verified_tts.cli.report import console
from verified_tts.cli.tables import copy_table

__all__ = ["app"]

app = typer.Typer()


@app.command("cast")
def cast_command(
    book: Annotated[
        Path,
        typer.Argument(
            help="Markdown (.md), EPUB (.epub) or plain-text (.txt) book.", show_default=False
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="Cast file to write.")] = Path("cast.toml"),
    narrator: Annotated[
        str | None,
        typer.Option("--narrator-voice", help="Narrator's voice (default: the config's)."),
    ] = None,
    voices_dir: Annotated[
        Path | None,
        typer.Option("--voices-dir", help="Folder of Piper voices to cast from."),
    ] = None,
    config: ConfigOption = None,  # its voices_dir and [generator] voice
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing cast file.")
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print every quote (start, end into the decoded text, speaker or null, "
            "confidence, why) and the characters as JSON; writes no cast file.",
        ),
    ] = False,
    explain: Annotated[
        bool,
        typer.Option("--explain", help="Also list every quote: who says it, and why."),
    ] = False,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            help="Confidence (0 to 1) below which a speaker guess goes to the dialogue voice "
            "(default 0.5); kept in the cast file, so a render with it attributes alike.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """List the characters who speak in BOOK and write cast.toml, a voice for each."""
    from verified_tts.cast import cast_toml, find_cast
    from verified_tts.casting.report import THRESHOLD, check_threshold
    from verified_tts.errors import UserError
    from verified_tts.options import ProductionOptions
    from verified_tts.storage.atomic import write_text_atomic
    from verified_tts.text.production import load_input
    from verified_tts.voices import EMBEDDED_PIPER, catalogue, find_voice

    sure = THRESHOLD if threshold is None else check_threshold(threshold, "--threshold")
    if as_json:
        import json

        from verified_tts.casting.report import cast_report
        from verified_tts.text.textfile import read_text_file

        if book.suffix.lower() == ".epub":
            raise UserError(
                f"{book}: --json reads plain text and Markdown, whose decoded text the offsets "
                "index; convert the EPUB to text first"
            )
        text = read_text_file(
            book, kind="book", expected="a UTF-8 text file", empty_hint="give a book with text"
        )
        typer.echo(json.dumps(cast_report(text, threshold=sure), indent=1, ensure_ascii=False))
        return
    if out.is_dir():  # --force replaces a cast file, never a folder
        raise UserError(f"--out {out} is a folder: give a file name such as {out / 'cast.toml'}")
    if out.exists() and not force:
        raise UserError(
            f"{out} exists and may hold your edits: give another --out, or --force to replace it"
        )
    table = config_table(config)
    folder = str(voices_dir) if voices_dir else table.get("voices_dir")
    wanted = narrator or table.get("generator", {}).get("voice") or f"piper:{EMBEDDED_PIPER}"
    narrator_voice = find_voice(wanted, folder).name
    loaded = load_input(book, ProductionOptions(), dialogue=True, threshold=sure)
    cast, characters = find_cast(
        loaded.book, narrator=narrator_voice, voices=catalogue(folder), threshold=sure
    )
    write_text_atomic(out, cast_toml(str(book), cast, characters))
    columns = ("character", "lines", "gender", "voice", "first line")
    shown = copy_table(
        f"cast of {book.name}", columns, keys=("character", "voice"), right=("lines",)
    )
    for character in characters:
        shown.add_row(
            escape(character.name),
            str(character.lines),
            character.gender or "?",
            escape(cast.characters[character.name]),
            escape(character.first_line[:60]),
        )
    dialogue = [s for s in loaded.book.segments if s.kind == "dialogue"]
    if explain:
        lines = copy_table(
            "who says each quote", ("line", "speaker", "why", "quote"), keys=("line", "speaker")
        )
        for segment in dialogue:
            lines.add_row(
                str(segment.line),
                escape(segment.speaker or "-"),
                escape(segment.speaker_reason or ""),
                escape(segment.text[:50]),
            )
        console.print(lines)
    console.print(shown)
    unknown = sum(1 for s in dialogue if not s.speaker)
    console.print(
        f"{len(dialogue)} dialogue utterances, {unknown} with no speaker found (they take "
        f"the dialogue voice, {escape(cast.dialogue)}); narrator {escape(cast.narrator)}"
    )
    console.print(f"wrote {out}: edit the voices, then render with --cast {out}")
