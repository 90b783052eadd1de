"""``voices`` and ``say``: what can speak here, and a sample of one voice.

``verified-tts voices`` prints the catalogue (:mod:`verified_tts.voices`): the embedded voices,
espeak-ng's languages (English unless ``--language`` asks for others) and the Piper voices of a
voices folder, with language, gender, sample rate and where each comes from.
``verified-tts say TEXT --voice NAME --out sample.wav`` speaks one line in one voice
(:mod:`verified_tts.workflows.say`). Both only parse options and call the library.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from verified_tts.cli.options import ConfigOption, SeedOption, config_table
from verified_tts.cli.report import JsonFileCompat, JsonOption, JsonOutOption, Report, console
from verified_tts.cli.tables import copy_table

__all__ = ["app"]

app = typer.Typer()

VoicesDirOption = Annotated[
    Path | None,
    typer.Option("--voices-dir", help="Folder of Piper voices (VOICE.onnx + VOICE.onnx.json)."),
]


def _voices_dir(voices_dir: Path | None, table: dict) -> str | None:
    return str(voices_dir) if voices_dir else table.get("voices_dir")


@app.command("voices", cls=JsonFileCompat)
def voices_command(
    voices_dir: VoicesDirOption = None,
    language: Annotated[
        str | None,
        typer.Option("--language", help="Only voices of this language (en, de, en-gb, all)."),
    ] = None,
    everything: Annotated[
        bool, typer.Option("--all", help="Also voices that are not on this machine yet.")
    ] = False,
    as_json: JsonOption = False,
    json_out: JsonOutOption = None,
    config: ConfigOption = None,
) -> None:
    """List the voices that can speak here, and how to hear each."""
    from verified_tts.voices import SAMPLE_TEXT, catalogue, espeak_variant_hint

    report = Report(as_json, json_out)
    with report.errors():
        voices = catalogue(_voices_dir(voices_dir, config_table(config)), everything=everything)
    wanted = (language or "en").lower().replace("_", "-")
    primary = wanted.split("-")[0]
    shown = [
        v
        for v in voices
        if wanted == "all"
        or (v.language or "").lower().replace("_", "-").startswith(wanted)
        or (v.language or "").lower() == primary  # a voice of "en" speaks en-gb too
        or (language is None and v.generator != "espeak")
    ]

    def human() -> None:
        if not shown:
            console.print(
                f"no voice here speaks '{escape(wanted)}': --language all lists every voice, "
                "and --voices-dir adds Piper voices you have"
            )
            return
        columns = ("name", "language", "gender", "Hz", "from", "notes")
        table = copy_table("voices", columns, keys=("name",), right=("Hz",))
        for v in shown:
            table.add_row(
                escape(v.name) if v.available else f"[dim]{escape(v.name)}[/]",
                v.language or "?",
                v.gender or "?",
                str(v.sample_rate or "?"),
                escape(v.source),
                escape(v.note),
            )
        console.print(table)
        if any(v.generator == "espeak" for v in shown):
            console.print(espeak_variant_hint())
        hidden = len(voices) - len(shown)
        if hidden:
            console.print(f"{hidden} more (other languages): --language all lists them")
        console.print(f'hear one: verified-tts say "{SAMPLE_TEXT}" --voice NAME --out sample.wav')

    report.emit({"voices": [v.as_dict() for v in shown]}, human)


@app.command("say")
def say_command(
    text: Annotated[str, typer.Argument(help="The words to say.", show_default=False)],
    voice: Annotated[
        str | None,
        typer.Option(
            "--voice",
            help="A voice from `verified-tts voices` (default: piper:en_US-joe-medium).",
        ),
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="WAV or FLAC file.")] = Path(
        "sample.wav"
    ),
    seed: SeedOption = None,
    voices_dir: VoicesDirOption = None,
    config: ConfigOption = None,
) -> None:
    """Say one line in one voice (a sample to choose voices by; nothing is verified)."""
    from verified_tts.workflows.say import say

    table = config_table(config)
    generators = table.get("generator", {})
    options = {k: v for k, v in generators.items() if isinstance(v, dict)}
    clip = say(
        text, out, voice=voice, seed=seed or 0, voices_dir=_voices_dir(voices_dir, table),
        options=options,
    )  # fmt: skip
    console.print(
        f"{escape(str(clip.path))}: {clip.duration_s:.2f} s at {clip.sample_rate} Hz, "
        f"{escape(clip.voice)}"
    )
