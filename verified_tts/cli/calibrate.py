"""``verified-tts calibrate [BOOK]``: what the verifiers catch on injected faults, and gates.

It calls :func:`verified_tts.workflows.calibrate.calibrate` and prints the recall per fault kind,
the false alarms on clean candidates and where the recommended ``gates.toml`` was written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from verified_tts.cli.options import SynthesisArgs, synthesis_options
from verified_tts.cli.report import console, interruptible

__all__ = ["app"]

app = typer.Typer()


@app.command("calibrate")
@synthesis_options("generator", "model", "codec", "voice", "voice_ref", "seed", "config")
def calibrate_command(
    synthesis: SynthesisArgs,
    book: Annotated[
        Path | None,
        typer.Argument(
            help="Book (.md, .txt or .epub) or subtitles (SRT, WebVTT: the dub's gates) to "
            "calibrate on (default: built-in sentences).",
            show_default=False,
        ),
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.")] = Path(
        "out/calibrate"
    ),
    sentences: Annotated[
        int, typer.Option("--sentences", help="Sentences (utterances) to calibrate on.")
    ] = 40,
    candidates: Annotated[
        int, typer.Option("-n", "--candidates", min=1, help="Clean candidates per sentence.")
    ] = 8,
    faults: Annotated[
        str | None,
        typer.Option(
            "--faults",
            help="Fault kinds, comma-separated (default: all): skip, "
            "repeat, substitute, truncate, babble, silence, voice, clip.",
        ),
    ] = None,
    false_alarm: Annotated[
        float, typer.Option("--false-alarm", help="Target share of clean candidates rejected.")
    ] = 0.05,
    chapters: Annotated[
        str | None,
        typer.Option("--chapters", help="Take the sentences from these chapters, e.g. 1-14."),
    ] = None,
) -> None:
    """Measure what the verifiers catch on injected faults and recommend calibrated gates."""
    from verified_tts.calibration.faults import FAULT_KINDS
    from verified_tts.options import CalibrateOptions
    from verified_tts.workflows.calibrate import calibrate

    options = CalibrateOptions(
        sentences=sentences,
        candidates=candidates,
        kinds=faults if faults is not None else FAULT_KINDS,
        false_alarm=false_alarm,
        chapters=chapters,
    )
    settings = synthesis.settings()
    with interruptible():
        result = calibrate(
            book, out, settings, options, on_stage=lambda line: console.print(escape(line))
        )
    data = result.data
    table = Table(title=f"calibration in {result.out_dir} ({data['seconds']['total']:.0f} s)")
    for column in ("fault", "cases", "recall now", "recommended", "held out", "best metric"):
        table.add_column(column, justify="right")
    for fault in data["faults"]:
        held = fault.get("held_out_recall")
        table.add_row(
            fault["kind"], str(fault["cases"]), f"{fault['recall']:.0%}",
            f"{fault['recall_at_target']:.0%}", "-" if held is None else f"{held:.0%}",
            str(fault["best_metric"]),
        )  # fmt: skip
    clean = data["clean"]
    table.add_row(
        "clean (false alarms)", str(clean["cases"]), f"{clean['false_alarm']:.0%}",
        f"{clean['false_alarm_recommended']:.0%}", f"{clean['held_out_false_alarm']:.0%}", "",
    )  # fmt: skip
    console.print(table)
    _print_short_lines(data["short_lines"])
    for point in data["selection"]:
        if point["p"] == 0.3 and point["n"] == 4:
            console.print(
                f"p=0.3, N=4: {point['faulted_winners']:.1%} faulted winners ({point['gates']})"
            )
    console.print(
        f"calibrate.json: {result.json_path}\ncalibrate.html: {result.html_path}\n"
        f"gates.toml: {result.gates_path} (use: --config {result.gates_path})"
    )


def _print_short_lines(short: dict) -> None:
    """Recall on lines of few words, and the faults such a line cannot carry."""
    if not short["utterances"]:
        return
    recall = ", ".join(
        f"{kind} {entry['recommended']:.0%}"
        for kind, entry in short["recall"].items()
        if entry["cases"]
    )
    console.print(
        f"short lines (up to {short['max_words']} words, {short['utterances']} of them): "
        f"recall with the recommended gates {recall}; false alarms "
        f"{short['false_alarm_recommended']:.0%}",
        soft_wrap=True,
    )
    for kind, why in short.get("cannot_carry", {}).items():
        console.print(
            f"not injected: {kind} on {why['lines']} line(s): {why['why']}", soft_wrap=True
        )
