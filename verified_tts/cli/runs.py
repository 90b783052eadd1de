"""What ``render`` and ``dub`` share around a run: the Ray pipeline behind ``--ray``, and the
rows and lines every run's summary ends with (candidates, stage times, missing verifiers,
damaged store entries)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from verified_tts.cli.report import console

__all__ = ["add_run_rows", "print_damaged", "ray_synthesizer"]


def ray_synthesizer(settings: Any, address: str | None) -> Any:  # -> Synthesizer | None
    """With --ray, the same pipeline with its generator and verifiers in Ray actors."""
    if not address:
        return None  # nothing imports Ray without --ray
    from verified_tts.cluster.ray_backend import load_ray_synthesizer

    console.print(f"starting generator and verifier actors on Ray ({address}) ...")
    return load_ray_synthesizer(settings, address)


def print_damaged(summary: Any) -> None:
    for line in getattr(summary, "damaged", ()):
        console.print(f"[yellow]damaged store entry:[/] {escape(line)}", highlight=False)


def add_run_rows(table: Table, summary: Any) -> None:  # a RenderSummary or a DubSummary
    """The rows every run's summary ends with: candidates, stage times, missing verifiers."""
    table.add_row(
        "candidates generated / reused",
        f"{summary.candidates_generated} / {summary.candidates_reused}",
    )
    for stage, seconds in summary.seconds.items():
        table.add_row(f"time: {stage}", f"{seconds:.1f} s")
    for name, reason in summary.unavailable.items():
        table.add_row(f"verifier {name}", escape(f"unavailable: {reason}"))
