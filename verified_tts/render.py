"""``render``: a Markdown or EPUB book in, chapter audio, the book file and ``manifest.json`` out.

This is the library function behind ``verified-tts render``: read and segment the book (chapter
selection, credits and lexicon included), load the generator and verifiers once, run best-of-N
over the store in the output folder (resuming whatever an earlier run finished), assemble and
master the winners chapter by chapter, encode the deliverables (M4B, MP3) and check them against
ACX (``acx.json``), and write the manifest atomically. It returns a
:class:`RenderSummary` that the CLI prints.
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verified_tts.assembly import AssembledFile, Placed, assemble_book
from verified_tts.config import RenderConfig
from verified_tts.errors import UserError
from verified_tts.output.deliver import deliver
from verified_tts.output.encode import BookTags
from verified_tts.pipeline import Synthesizer, UtteranceResult
from verified_tts.report import write_render_report
from verified_tts.store import Store
from verified_tts.text import Book
from verified_tts.text.production import LoadedBook, load_input

__all__ = [
    "RenderSummary",
    "book_tags",
    "build_manifest",
    "finish_output",
    "place_winners",
    "prepare_output",
    "render",
    "summarise",
    "write_json_atomic",
]

STORE_DIR = "store"


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


def write_json_atomic(path: Path, data: Any) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(data, stream, indent=2, ensure_ascii=False)
            stream.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def summarise(results: Sequence[UtteranceResult]) -> dict[str, Any]:
    """Quality figures of a run: flagged count, gate pass share, winner vs candidate-0 WER."""
    flagged = sum(r.flagged for r in results)
    winners = [
        r.winner_candidate.metrics["wer"] for r in results if "wer" in r.winner_candidate.metrics
    ]
    firsts = [r.candidates[0].metrics["wer"] for r in results if "wer" in r.candidates[0].metrics]
    return {
        "utterances": len(results),
        "flagged": flagged,
        "passed_share": round(1 - flagged / len(results), 4) if results else 0.0,
        "mean_wer_winners": _mean(winners),
        "mean_wer_candidate0": _mean(firsts),
        "mean_candidates_per_utterance": _mean([len(r.candidates) for r in results]),
    }


def _utterance_record(result: UtteranceResult) -> dict[str, Any]:
    segment = result.utterance.segment
    winner = result.winner_candidate

    def audio_path(relative: str | None) -> str | None:
        return f"{STORE_DIR}/{relative}" if relative else None

    return {
        "key": result.utterance.key,
        "chapter": segment.chapter,
        "paragraph": segment.paragraph,
        "line": segment.line,
        "kind": segment.kind,
        "text": segment.text,
        "spoken": segment.spoken,
        "voice": result.utterance.voice,
        "emotion": segment.emotion,
        **({"lexicon": list(segment.lexicon)} if segment.lexicon else {}),
        **({"phonemes": [list(p) for p in segment.phonemes]} if segment.phonemes else {}),
        "audio": audio_path(winner.audio),
        "winner": result.winner,
        "flagged": result.flagged,
        "reused": result.reused,
        "candidates": [
            {
                "index": c.index,
                "seed": c.seed,
                "duration_s": c.duration_s,
                "scores": dict(c.metrics),
                "detail": dict(c.detail),
                "passed": c.passed,
                "failed_gates": list(c.failed),
                "score": round(c.score, 5),
                "info": dict(c.info),
                **({"audio": audio_path(c.audio)} if c.audio else {}),
            }
            for c in result.candidates
        ],
    }


def build_manifest(
    *,
    synthesizer: Synthesizer,
    source: str,
    book_title: str | None,
    results: Sequence[UtteranceResult],
    files: Sequence[AssembledFile],
    n: int,
    wall_seconds: float,
    loaded: LoadedBook | None = None,
    delivery: dict[str, Any] | None = None,
) -> dict[str, Any]:
    config = synthesizer.config
    stats = synthesizer.stats.as_dict()
    return {
        "format": "verified-tts manifest 1",
        "input": source,
        "title": book_title,
        "generator": synthesizer.generator.name,
        "model": synthesizer.generator.model,
        "sample_rate": synthesizer.generator.sample_rate,
        "n": n,
        "adaptive": config.selection.adaptive,
        "seed": config.seed,
        "voice": config.generator.voice,
        "voice_ref": config.generator.voice_ref,
        "keep": config.keep,
        "verifiers": synthesizer.verifiers.status,
        "selection": {
            "gates": [
                {k: v for k, v in vars(g).items() if v is not None} for g in config.selection.gates
            ],
            "weights": dict(config.selection.weights),
        },
        "stats": {**stats, **summarise(results), "wall_seconds": round(wall_seconds, 3)},
        "production": _production_record(config, loaded),
        "delivery": delivery or {},
        "chapters": [
            {
                "index": f.index,
                "title": f.title,
                "wav": f.wav,
                "flac": f.flac,
                "duration_s": f.duration_s,
            }
            for f in files
            if f.index is not None
        ],
        "book": next(
            {"wav": f.wav, "flac": f.flac, "duration_s": f.duration_s}
            for f in files
            if f.index is None
        ),
        "utterances": [_utterance_record(r) for r in results],
    }


def _production_record(config: Any, loaded: LoadedBook | None) -> dict[str, Any]:
    options = config.production
    record: dict[str, Any] = {
        "formats": list(options.formats),
        "chapters": options.chapters,
        "keep_extras": options.keep_extras,
        "credits": options.credits,
        "narrator": options.narrator,
        "author": options.author,
        "split_hours": options.split_hours,
        "lexicon": options.lexicon,
    }
    if loaded is not None:
        record["book_author"] = loaded.book.author
        record["language"] = loaded.book.language
        record["skipped"] = list(loaded.skipped)
        if loaded.lexicon is not None:
            record["lexicon_entries"] = [e.as_dict() for e in loaded.lexicon.entries]
    return record


def place_winners(results: Sequence[UtteranceResult], book: Book, store: Store) -> list[Placed]:
    """Each winner with its chapter and the pause after it; the audio is read from the store
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
            )
        )
    return placed


def book_tags(book: Book, config: Any) -> BookTags:
    """Tags for the deliverables: the book's own, or what the production options say."""
    return BookTags(
        title=book.title,
        author=config.production.author or book.author,
        narrator=config.production.narrator,
        language=book.language,
        cover=book.cover,
    )


def finish_output(
    out: Path, placed: Sequence[Placed], book: Book, config: Any, sample_rate: int
) -> tuple[list[AssembledFile], dict[str, Any]]:
    """Assemble and master the chapters, write the deliverables and ``acx.json``."""
    files = assemble_book(
        placed, sample_rate, out, config.assembly, formats=config.production.formats
    )
    delivery = deliver(files, out, config.production, book_tags(book, config))
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
    """Render ``book_path`` into ``out_dir``; resumable, see the module docstring."""
    started = time.perf_counter()
    loaded = load_input(book_path, config.production, max_chars=config.max_chars)
    book: Book = loaded.book
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
    files, delivery = finish_output(out, placed, book, config, synthesizer.generator.sample_rate)
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
    )
    write_json_atomic(out / "manifest.json", manifest)
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
        seconds=manifest["stats"]["seconds"],
        unavailable={
            name: s["reason"]
            for name, s in synthesizer.verifiers.status.items()
            if not s["available"]
        },
    )
