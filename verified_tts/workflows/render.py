"""``render``: a Markdown or EPUB book in, chapter audio, the book file and ``manifest.json`` out.

This is the library function behind ``verified-tts render``: read and segment the book (chapter
selection, credits and lexicon included), load the generator and verifiers once, run best-of-N
over the store in the output folder (resuming whatever an earlier run finished), assemble and
master the winners chapter by chapter, encode the deliverables (M4B, MP3) and check them against
ACX (``acx.json``), and write the manifest atomically. It returns a :class:`RenderSummary` that
the CLI prints.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError
from verified_tts.options import RenderConfig
from verified_tts.output.assembly import AssembledFile, Placed, assemble_book
from verified_tts.output.deliver import deliver
from verified_tts.output.encode import BookTags
from verified_tts.output.lock import output_lock
from verified_tts.output.manifest import output_folders, write_manifest
from verified_tts.output.readalong import ReadAlongInput
from verified_tts.output.report import write_render_report
from verified_tts.output.run_manifest import build_manifest, one_take_voices
from verified_tts.output.source import check_same_input
from verified_tts.output.word_timing import ALIGNER_VERSION, DEFAULT_LAG_S, load_aligner
from verified_tts.pipeline import Synthesizer
from verified_tts.review.hook import ReviewHook
from verified_tts.review.index import write_index
from verified_tts.storage.atomic import remove_interrupted_writes, write_json_atomic
from verified_tts.storage.results import UtteranceResult
from verified_tts.storage.store import STORE_DIR, Store
from verified_tts.text.book import Book
from verified_tts.text.production import check_language, load_input

__all__ = [
    "RenderSummary",
    "book_tags",
    "finish_output",
    "place_winners",
    "prepare_output",
    "read_along_input",
    "render",
]


@dataclass(frozen=True)
class RenderSummary:
    """What the CLI prints at the end of a render."""

    out_dir: Path
    utterances: int
    flagged: int
    passed_share: float
    mean_wer_winners: float | None  # the verifier's own WER: it chose the winners, so no evidence
    mean_wer_candidate0: float | None
    candidates_generated: int
    candidates_reused: int
    seconds: dict[str, float]
    unavailable: dict[str, str]  # verifier -> why it did not score
    damaged: tuple[str, ...] = ()  # store entries found damaged, dropped and generated again
    warnings: tuple[str, ...] = ()  # what the book got wrong and was read without (its PLS)
    lines_take_changed: int = 0  # lines whose kept take is not candidate 0 (N=1's)
    lines_more_takes: int = 0  # lines given more takes than the first round
    more_takes_because: Mapping[str, int] = field(default_factory=dict)
    # voices given one take a line: their takes differ only in noise (the manifest's voices say)
    one_take_voices: tuple[str, ...] = ()


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
    """Each winner with its chapter and the pauses around it; the audio is read from the store
    when assembly reaches it, so only one chapter's audio is ever loaded."""
    titles = {chapter.index: chapter.title for chapter in book.chapters}
    placed = []
    for r in results:
        stored = store.get_candidate(r.winner_candidate.key)
        placed.append(
            Placed(
                audio=functools.partial(store.load_audio, stored),
                chapter=r.utterance.segment.chapter,
                chapter_title=titles[r.utterance.segment.chapter],
                pause_after=r.utterance.segment.pause_after,
                pause_before=r.utterance.segment.pause_before,
                sample_rate=stored.sample_rate,
                segment=r.utterance.segment,
                key=r.winner_candidate.key,
                info=stored.info,
            )
        )
    return placed


def book_tags(book: Book, config: RenderConfig) -> BookTags:
    """Tags for the deliverables: the book's own, or what the production options say."""
    return BookTags(
        title=book.title,
        author=config.production.author or book.author,
        narrator=config.production.narrator,
        language=book.language,
        cover=book.cover,
    )


def read_along_input(
    book: Book, source: str | os.PathLike, config: RenderConfig, verifiers: Any = None
) -> ReadAlongInput:
    """What the read-along files need: the book, the EPUB it was read from, and a word aligner
    on the render's own Whisper (loaded only if some winner needs aligning)."""
    path = Path(source)
    wer_options = config.verifiers.wer
    return ReadAlongInput(
        book=book,
        source=path if path.suffix.lower() == ".epub" else None,
        aligner=lambda: load_aligner(verifiers, wer_options),
        aligner_identity={
            "version": ALIGNER_VERSION,
            "lag_s": DEFAULT_LAG_S,
            "model": wer_options.model,
            "compute_type": wer_options.compute_type,
        },
    )


def finish_output(
    out: Path,
    placed: Sequence[Placed],
    book: Book,
    config: RenderConfig,
    sample_rate: int,
    read_along: ReadAlongInput | None = None,
) -> tuple[list[AssembledFile], dict[str, Any]]:
    """Assemble and master the chapters, write the deliverables (the read-along ones too,
    given ``read_along``) and ``acx.json``."""
    files = assemble_book(
        placed, sample_rate, out, config.assembly, formats=config.production.formats
    )
    delivery = deliver(files, out, config.production, book_tags(book, config), read_along)
    write_json_atomic(out / "acx.json", delivery["acx"])
    return files, delivery


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
    """Render ``book_path`` into ``out_dir``; resumable, see the module docstring. The folder
    is locked while it runs, and a review's decisions recorded in it are kept."""
    started = time.perf_counter()
    run_began = time.time()  # earlier temporary files are a killed run's
    loaded = load_input(
        book_path,
        config.production,
        max_chars=config.utterance_chars(),
        voices_dir=config.voices_dir,
    )
    overridden = config.production.language_override is not None
    check_language(loaded.book, config.generator, book_path, overridden)
    if config.pronunciation.candidates:
        from verified_tts.pronounce.book import check_sources

        check_sources(config.pronunciation)  # a missing extra fails before the models load
    book: Book = loaded.book
    check_same_input(out_dir, book_path, "render")  # before anything is written there
    out = prepare_output(out_dir)
    with output_lock(out, "render"):
        review = ReviewHook.load(out)
        if synthesizer is None:
            if on_loading:
                on_loading()
            load_started = time.perf_counter()
            synthesizer = Synthesizer.load(config)
            synthesizer.stats.seconds["load"] += time.perf_counter() - load_started
        synthesizer.start_run()
        pronunciation = None
        with Store(out / STORE_DIR) as store:
            if config.pronunciation.enabled:
                from verified_tts.pronounce.book import render_pronounced

                if on_start:
                    on_start(len(book.segments))
                results, pronunciation = render_pronounced(
                    book, loaded.lexicon, synthesizer, store, review, on_result=on_result
                )
            else:
                utterances = review.plan(synthesizer, book.segments)
                if on_start:
                    on_start(len(utterances))
                results = review.results(synthesizer.run(utterances, store, on_result=on_result))
            assemble_started = time.perf_counter()
            placed = place_winners(results, book, store)
            damaged = tuple(store.damaged)
        read_along = read_along_input(book, book_path, config, synthesizer.verifiers)
        files, delivery = finish_output(out, placed, book, config,
                                        synthesizer.generator.sample_rate, read_along)  # fmt: skip
        synthesizer.stats.seconds["assemble"] += time.perf_counter() - assemble_started
        manifest = build_manifest(
            synthesizer=synthesizer,
            source=str(book_path),
            book_title=book.title,
            results=results,
            files=files,
            n=config.candidates,
            wall_seconds=time.perf_counter() - started,
            loaded=loaded,
            delivery=delivery,
            out=out,
        )
        manifest = review.manifest(manifest)
        if pronunciation is not None:
            from verified_tts.pronounce.book import write_lexicon

            write_lexicon(out, pronunciation, loaded.lexicon)
            block = pronunciation.block()
            manifest = replace(manifest, extra={**manifest.extra, "pronunciations": block})
        write_manifest(out, manifest)
        write_index(out, manifest)  # the review opens a long book from it
        write_render_report(out, manifest)  # report.html: flagged utterances first
        remove_interrupted_writes(output_folders(out), older_than=run_began)
    quality = manifest.stats
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
        unavailable=synthesizer.verifiers.unavailable(),
        damaged=damaged,
        warnings=loaded.warnings,
        lines_take_changed=quality.get("lines_take_changed", 0),
        lines_more_takes=quality.get("lines_more_takes", 0),
        more_takes_because=quality.get("more_takes_because", {}),
        one_take_voices=one_take_voices(manifest.voices),
    )
