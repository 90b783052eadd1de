"""``verified-tts dub SUBTITLES``: every cue voiced to fit its slot, into one timed track.

It parses the dub's options into ``[dub]`` keys, merges them with the shared options
(:mod:`verified_tts.cli.options`) over ``--config`` and calls
:func:`verified_tts.workflows.dub.dub`; the summary table is all it adds.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from jobs.progress import job_progress
from verified_tts.cli.options import SynthesisArgs, synthesis_options
from verified_tts.cli.render import RUN_OPTIONS, OutOption
from verified_tts.cli.report import RunProgress, console, interruptible, warn
from verified_tts.cli.runs import add_run_rows, print_damaged, ray_synthesizer
from verified_tts.errors import UserError

__all__ = ["app"]

app = typer.Typer()


def _voice_map(pairs: list[str] | None) -> dict[str, str]:
    voices = {}
    for pair in pairs or []:
        name, sep, voice = pair.partition("=")
        if not sep or not name.strip() or not voice.strip():
            raise UserError(
                f"--voice-map '{pair}' must read NAME=VOICE, e.g. --voice-map ANNA=hibari:heart"
            )
        voices[name.strip()] = voice.strip()
    return voices


def _print_dub_summary(summary) -> None:  # summary: DubSummary
    print_damaged(summary)
    table = Table(title=f"dubbed into {summary.out_dir}", show_header=False)
    table.add_row("cues voiced / skipped", f"{summary.cues} / {summary.skipped}")
    table.add_row("flagged (gates failed, or too long for its slot)", str(summary.flagged))
    share = summary.fit_without_stretch / summary.cues if summary.cues else 0.0
    table.add_row("fit without stretching", f"{summary.fit_without_stretch} ({share:.0%})")
    table.add_row("stretch, mean / max", f"{summary.mean_stretch:.3f} / {summary.max_stretch:.3f}")
    table.add_row("ran past their slot", str(summary.overran))
    add_run_rows(table, summary)
    console.print(table)
    for index, text, reasons in summary.flags[:_FLAGS_SHOWN]:
        console.print(f"flagged cue {index} {text!r}: {'; '.join(reasons)}", soft_wrap=True)
    if len(summary.flags) > _FLAGS_SHOWN:
        console.print(f"... and {len(summary.flags) - _FLAGS_SHOWN} more flagged cues in dub.json")


_FLAGS_SHOWN = 10  # flagged cues listed after a dub's summary


@app.command("dub")
@synthesis_options(*RUN_OPTIONS)
def dub(
    subtitles: Annotated[
        Path, typer.Argument(help="SRT or WebVTT subtitles to voice.", show_default=False)
    ],
    synthesis: SynthesisArgs,
    out: OutOption = None,
    speed_limit: Annotated[
        float | None,
        typer.Option("--speed-limit", help="Most a winner is sped up to fit (default 1.25)."),
    ] = None,
    duration: Annotated[
        float | None,
        typer.Option("--duration", help="Track length in seconds (default: last cue + 1 s)."),
    ] = None,
    mix: Annotated[
        Path | None,
        typer.Option("--mix", help="Original soundtrack (WAV/FLAC): also write mix.wav."),
    ] = None,
    duck_db: Annotated[
        float | None,
        typer.Option("--duck-db", help="Lower the original by this under speech (default 12)."),
    ] = None,
    video: Annotated[
        Path | None,
        typer.Option(
            "--video",
            help="Film to dub (MP4, MKV, ...): writes FILM.dub.mp4 with the picture copied, the "
            "mix as the default track in --language, the original audio kept, and subtitles.",
        ),
    ] = None,
    background: Annotated[
        Path | None,
        typer.Option("--background", help="Music-and-effects stem (WAV/FLAC) to mix the dub over."),
    ] = None,
    language: Annotated[
        str | None,
        typer.Option("--language", help="The dub's language tag, e.g. es (default: the voice's)."),
    ] = None,
    original_language: Annotated[
        str | None,
        typer.Option(
            "--original-language",
            help="The film's own language (e.g. en), tagged on its kept track if it has no tag.",
        ),
    ] = None,
    loudness: Annotated[
        float | None,
        typer.Option(
            "--loudness", help="Integrated loudness of the mix in LUFS (default -23, EBU R128)."
        ),
    ] = None,
    true_peak: Annotated[
        float | None,
        typer.Option("--true-peak", help="True-peak ceiling of the mix in dBTP (default -1)."),
    ] = None,
    dialogue_ratio: Annotated[
        float | None,
        typer.Option(
            "--dialogue-ratio", help="Dialogue above the background under each line, dB (10)."
        ),
    ] = None,
    attack: Annotated[
        float | None, typer.Option("--attack", help="Seconds the bed ramps down before a line.")
    ] = None,
    release: Annotated[
        float | None, typer.Option("--release", help="Seconds the bed ramps up after a line.")
    ] = None,
    voice_map: Annotated[
        list[str] | None,
        typer.Option(
            "--voice-map", help="Speaker voice, NAME=VOICE (repeatable; or dub.voices in TOML)."
        ),
    ] = None,
    cast: Annotated[
        Path | None,
        typer.Option(
            "--cast",
            help="Cast file (as for books): each speaker's voice; its narrator speaks cues "
            "without a speaker unless --voice says otherwise; --voice-map wins over it.",
        ),
    ] = None,
) -> None:
    """Voice every cue of a subtitle file so it fits its slot, into one timed track."""
    from verified_tts.workflows.dub import dub as dub_subtitles

    cast_file = None
    if cast is not None:
        from verified_tts.cast import read_cast

        cast_file = read_cast(cast, voices_dir=synthesis.table().get("voices_dir"))
        synthesis = replace(synthesis, voice=synthesis.voice or cast_file.narrator)
    settings = synthesis.settings(
        dub={
            "speed_limit": speed_limit,
            "duration": duration,
            "duck_db": duck_db,
            "voices": _voice_map(voice_map) or None,  # on top of the file's [dub.voices]
            "language": language,
            "original_language": original_language,
            "loudness_lufs": loudness,
            "true_peak_dbtp": true_peak,
            "dialogue_ratio_db": dialogue_ratio,
            "attack_s": attack,
            "release_s": release,
        },
    )
    out = out or Path("out") / subtitles.stem
    progress = RunProgress("dubbing", settings.generator.name, job_progress(out))
    with interruptible(progress):
        summary = dub_subtitles(
            subtitles,
            out,
            settings,
            mix=mix,
            video=video,
            background=background,
            cast=cast_file,
            synthesizer=ray_synthesizer(settings, synthesis.ray),
            on_warning=warn,
            **progress.callbacks(),
        )
    _print_dub_summary(summary)
    console.print(f"track: {summary.track}")
    if summary.mix is not None:
        console.print(f"mix: {summary.mix}")
    if summary.loudness is not None:
        console.print(
            f"mix loudness: {summary.loudness['integrated_lufs']:.1f} LUFS integrated, "
            f"range {summary.loudness['loudness_range_lu']:.1f} LU, true peak "
            f"{summary.loudness['true_peak_dbtp']:.1f} dBTP"
        )
    if summary.video is not None:
        console.print(f"film: {summary.video}")
    console.print(f"report: {summary.out_dir / 'dub.json'}")
