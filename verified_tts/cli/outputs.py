"""``rerender`` and ``doctor``: the commands that work on a finished output folder.

``rerender OUT -u KEY`` re-renders one utterance with more candidates from the configuration the
manifest records (:mod:`verified_tts.workflows.rerender`); ``doctor OUT`` checks the folder's
store and repairs what it can (:mod:`verified_tts.workflows.doctor`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from verified_tts.cli.options import SynthesisArgs, synthesis_options
from verified_tts.cli.report import console
from verified_tts.errors import UserError

__all__ = ["app"]

app = typer.Typer()


@app.command("rerender")
@synthesis_options()
def rerender_command(
    synthesis: SynthesisArgs,
    out_dir: Annotated[
        Path, typer.Argument(help="Output folder of a finished render.", show_default=False)
    ],
    utterance: Annotated[
        str, typer.Option("--utterance", "-u", help="Utterance key (or a unique prefix).")
    ],
    candidates: Annotated[
        int, typer.Option("-n", "--candidates", min=1, help="Candidates for this utterance.")
    ] = 16,
) -> None:
    """Re-render one utterance with more candidates and put it back into the chapter files.

    The render's own configuration comes from its manifest; --config replaces it and the other
    options go on top."""
    from verified_tts.output.manifest import read_manifest
    from verified_tts.output.run_manifest import one_take_voices
    from verified_tts.workflows.rerender import config_from_manifest, rerender

    manifest_path = out_dir / "manifest.json"
    if not manifest_path.is_file():
        raise UserError(
            f"{out_dir} has no manifest.json: give the --out folder of a finished render"
        )
    settings = config_from_manifest(
        read_manifest(out_dir),
        synthesis.table() if synthesis.config else None,
        **synthesis.overrides(),
    )
    console.print(f"loading models for {settings.generator.name} ...")
    result = rerender(out_dir, utterance, candidates, config=settings)
    console.print(
        f"{result.key} ({result.text!r}): winner {result.previous_winner} -> {result.winner} "
        f"at N={result.n}, flagged {result.flagged_before} -> {result.flagged}; "
        f"{result.candidates_generated} candidates generated, {result.candidates_reused} reused",
        highlight=False,
        soft_wrap=True,
    )
    done = read_manifest(out_dir)
    spoken_by = next((u.spoken_by for u in done.utterances if u.key == result.key), None)
    if spoken_by in one_take_voices(done.voices):
        console.print(
            f"{spoken_by} made one take: its takes differ only in signal noise, so more would "
            "change nothing (seeded variation in --config makes them differ: docs/voices.md)",
            highlight=False,
            soft_wrap=True,
            emoji=False,
        )
    console.print(f"report: {result.out_dir / 'report.html'}")


@app.command("doctor")
def doctor_command(
    out_dir: Annotated[
        Path, typer.Argument(help="Output folder of a render or dub.", show_default=False)
    ],
    check_only: Annotated[
        bool, typer.Option("--check-only", help="Report problems without repairing them.")
    ] = False,
) -> None:
    """Check an output folder's store and repair what can be repaired, saying what it did."""
    from verified_tts.workflows.doctor import doctor

    report = doctor(out_dir, repair=not check_only)
    console.print(
        f"store {report.store}: {report.candidates} candidates, {report.decisions} decisions"
    )
    for problem in report.problems:
        console.print(f"[yellow]problem:[/] {escape(problem)}", highlight=False)
    for repair in report.repairs:
        console.print(f"[green]repaired:[/] {escape(repair)}", highlight=False)
    if report.healthy:
        console.print("[green]no problems found[/]")
    elif check_only:
        raise typer.Exit(1)
