"""``render``: a Markdown book in, chapter audio, the book file and ``manifest.json`` out.

This is the library function behind ``verified-tts render``: read and segment the book, load the
generator and verifiers once, run best-of-N over the store in the output folder (resuming whatever
an earlier run finished), assemble the winners, and write the manifest atomically. It returns a
:class:`RenderSummary` that the CLI prints.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from verified_tts.config import RenderConfig
from verified_tts.errors import UserError
from verified_tts.output.assembly import Placed, assemble_book
from verified_tts.output.manifest import STORE_DIR, build_manifest, summarise, write_manifest
from verified_tts.output.report import write_render_report
from verified_tts.pipeline import Synthesizer, UtteranceResult
from verified_tts.store import Store
from verified_tts.text.book import Book, load_book

__all__ = ["STORE_DIR", "RenderSummary", "place_winners", "prepare_output", "render"]


@dataclass(frozen=True)
class RenderSummary:
    """What the CLI prints at the end of a render."""

    out_dir: Path
    utterances: int
    flagged: int
    passed_share: float
    mean_wer_winners: float | None
    mean_wer_candidate0: float | None
    candidates_generated: int
    candidates_reused: int
    seconds: dict[str, float]
    unavailable: dict[str, str]  # verifier -> why it did not score
    damaged: tuple[str, ...] = ()  # store entries found damaged, dropped and generated again


def prepare_output(out_dir: str | os.PathLike) -> Path:
    """Create the output folder (and its store) or explain why it cannot be created."""
    path = Path(out_dir)
    if path.exists() and not path.is_dir():
        raise UserError(f"--out {path} is a file, not a folder: choose a folder path")
    try:
        (path / STORE_DIR).mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise UserError(
            f"cannot create or write the output folder {path} ({error.strerror}): "
            "choose a writable --out folder"
        ) from error
    return path


def place_winners(results: Sequence[UtteranceResult], book: Book, store: Store) -> list[Placed]:
    """Each winner's audio from the store (loaded when assembly reaches it, so a long book is not
    held in memory), with its chapter and the pause after it."""
    return [
        Placed(
            audio=partial(store.load_audio, store.get_candidate(r.winner_candidate.key)),
            chapter=r.utterance.segment.chapter,
            chapter_title=book.chapters[r.utterance.segment.chapter].title,
            pause_after=r.utterance.segment.pause_after,
        )
        for r in results
    ]


def render(
    book_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    config: RenderConfig,
    *,
    synthesizer: Synthesizer | None = None,
    on_loading: Callable[[], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_result: Callable[[UtteranceResult], None] | None = None,
) -> RenderSummary:
    """Render ``book_path`` into ``out_dir``; resumable, see the module docstring."""
    started = time.perf_counter()
    book: Book = load_book(book_path, max_chars=config.utterance_chars())
    out = prepare_output(out_dir)
    if synthesizer is None:
        if on_loading:
            on_loading()
        load_started = time.perf_counter()
        synthesizer = Synthesizer.load(config)
        synthesizer.stats.seconds["load"] += time.perf_counter() - load_started
    utterances = synthesizer.plan(book.segments)
    if on_start:
        on_start(len(utterances))
    with Store(out / STORE_DIR) as store:
        results = synthesizer.run(utterances, store, on_result=on_result)
        assemble_started = time.perf_counter()
        placed = place_winners(results, book, store)
        damaged = tuple(store.damaged)
    files = assemble_book(placed, synthesizer.generator.sample_rate, out, config.assembly)
    synthesizer.stats.seconds["assemble"] += time.perf_counter() - assemble_started
    manifest = build_manifest(
        synthesizer=synthesizer,
        source=str(book_path),
        book_title=book.title,
        results=results,
        files=files,
        n=config.candidates,
        wall_seconds=time.perf_counter() - started,
    )
    write_manifest(out, manifest)
    write_render_report(out, manifest)  # report.html: flagged utterances first, every candidate
    quality = summarise(results)
    return RenderSummary(
        out_dir=out,
        utterances=quality["utterances"],
        flagged=quality["flagged"],
        passed_share=quality["passed_share"],
        mean_wer_winners=quality["mean_wer_winners"],
        mean_wer_candidate0=quality["mean_wer_candidate0"],
        candidates_generated=synthesizer.stats.candidates_generated,
        candidates_reused=synthesizer.stats.candidates_reused,
        seconds=manifest.stats["seconds"],
        unavailable={
            name: s["reason"]
            for name, s in synthesizer.verifiers.status.items()
            if not s["available"]
        },
        damaged=damaged,
    )
