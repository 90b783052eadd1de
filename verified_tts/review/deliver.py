"""Deliver a review: the chapters whose takes changed are assembled again, then what follows.

The book is read again (for its chapters' titles and the pauses between lines; it must still line
up with the manifest) and each chapter gets a signature: the audio of every take it holds, in
order, with its pauses, the assembly settings and the sample rate. ``review/assembled.json``
records the signature of what each chapter file holds, for the manifest it was written beside;
where that manifest is not the one on disk any more (a render wrote a new one), the files hold
the winners that manifest lists. A chapter is assembled again only where its signature changed;
its entry is dropped before its files are written and set after, so a killed delivery can leave
a chapter unknown (assembled next time) but never wrongly known. Then the book files, the M4B and
MP3 deliverables, the ACX check, the read-along files (``timings.json``, captions, ``book.epub``:
the chapters assembled again get new maps, the others keep theirs), ``manifest.json`` (each line
with its ``review`` block) and ``report.html`` are written, every file atomically. No model is
loaded, except Whisper where word timings are asked of a generator that does not give them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import soundfile as sf

from verified_tts.config import RenderConfig
from verified_tts.errors import UserError
from verified_tts.output.assembly import AssembledFile, Placed, write_book_files, write_chapter
from verified_tts.output.deliver import deliver
from verified_tts.output.manifest import (
    MANIFEST_FILE,
    BookRecord,
    ChapterRecord,
    Manifest,
    UtteranceRecord,
    output_folders,
    write_manifest,
)
from verified_tts.output.report import write_render_report
from verified_tts.output.source import book_source, find_book
from verified_tts.output.timings import READALONG_DIR
from verified_tts.review.decisions import REVIEW_DIR
from verified_tts.review.index import write_index
from verified_tts.storage.atomic import remove_interrupted_writes, write_json_atomic
from verified_tts.storage.keys import stable_hash
from verified_tts.text.book import Book, Segment
from verified_tts.text.production import load_input
from verified_tts.workflows.render import book_tags, read_along_input

__all__ = ["ASSEMBLED_FILE", "Delivery", "book_segments", "chapter_signatures", "deliver_review"]

ASSEMBLED_FILE = f"{REVIEW_DIR}/assembled.json"


@dataclass(frozen=True)
class Delivery:
    """What one delivery did."""

    rebuilt: tuple[int, ...]  # chapters assembled again (indices)
    kept: tuple[int, ...]  # chapters whose files were already right
    files: tuple[str, ...]  # the deliverables written (M4B parts, MP3s)
    acx_passed: bool | None
    seconds: float
    stages: dict[str, float] = field(default_factory=dict)  # seconds each step took

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rebuilt": list(self.rebuilt), "kept": list(self.kept),
                "files": list(self.files)}  # fmt: skip


def _reviewed_words(
    out: Path, block: dict[str, Any], summary: dict[str, Any] | None, config: RenderConfig
) -> dict[str, Any]:
    """The render's decided words with the review's lexicon entries for them, and
    ``lexicon.toml`` written again to hold them (the producer's choice wins)."""
    from verified_tts.pronounce.book import with_review
    from verified_tts.review.hook import lexicon_entry
    from verified_tts.text.lexicon import load_lexicon

    entries = [lexicon_entry(e) for e in (summary or {}).get("lexicon", ())]
    producer = load_lexicon(config.production.lexicon) if config.production.lexicon else None
    return with_review(block, entries, out, producer)


def _stamp(out: Path) -> list[int]:
    stat = (out / MANIFEST_FILE).stat()
    return [stat.st_size, stat.st_mtime_ns]


def book_segments(
    manifest: Manifest, config: RenderConfig, out: str | Path | None = None
) -> tuple[Book, list[Segment]]:
    """The render's book read again (found from the working directory or from the output
    folder ``out``, :func:`~verified_tts.output.source.find_book`); its lines must be the
    manifest's, in the same order."""
    source = find_book(manifest.input, manifest.source, out if out is not None else Path.cwd())
    book = load_input(
        source, config.production, max_chars=config.utterance_chars(), voices_dir=config.voices_dir
    ).book
    segments = list(book.segments)
    texts = [u.text for u in manifest.utterances]
    if [s.text for s in segments] != texts:
        changed = next(
            (i for i, (s, t) in enumerate(zip(segments, texts, strict=False)) if s.text != t),
            min(len(segments), len(texts)),
        )
        raise UserError(
            f"{source} changed since the render (from line {changed + 1} of the manifest): run "
            "`verified-tts render` on it again; the review's decisions are kept and applied"
        )
    return book, segments


def _chapters(
    records: Sequence[UtteranceRecord], segments: Sequence[Segment]
) -> dict[int, list[tuple[UtteranceRecord, Segment]]]:
    grouped: dict[int, list[tuple[UtteranceRecord, Segment]]] = {}
    for record, segment in zip(records, segments, strict=True):
        grouped.setdefault(segment.chapter, []).append((record, segment))
    return grouped


def chapter_signatures(
    records: Sequence[UtteranceRecord],
    segments: Sequence[Segment],
    titles: dict[int, str | None],
    sample_rate: int,
    config: RenderConfig,
) -> dict[int, str]:
    """Each chapter's signature: what its file holds if assembled from ``records``."""
    formats = sorted(f for f in config.production.formats if f in ("wav", "flac"))
    settings = {"rate": sample_rate, "assembly": asdict(config.assembly), "formats": formats}
    return {
        index: stable_hash(
            {
                **settings,
                "title": titles.get(index),
                "takes": [[r.audio, s.pause_after, s.pause_before] for r, s in items],
            }
        )  # fmt: skip
        for index, items in _chapters(records, segments).items()
    }


@dataclass
class _Held:
    """What the files hold, by chapter signature: each chapter's WAV/FLAC, and its MP3."""

    chapters: dict[int, str]
    mp3: dict[int, str]

    @classmethod
    def read(cls, out: Path, known: dict[int, str], mp3: bool) -> _Held:
        """The record of the last delivery when it was written beside the manifest on disk,
        else what the manifest's own winners make (``known``)."""
        try:
            data = json.loads((out / ASSEMBLED_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        if data.get("manifest") == _stamp(out):
            return cls(*({int(k): v for k, v in data.get(part, {}).items()}
                         for part in ("chapters", "mp3")))  # fmt: skip
        return cls(dict(known), dict(known) if mp3 else {})

    def write(self, out: Path) -> None:
        write_json_atomic(out / ASSEMBLED_FILE, {
            "manifest": _stamp(out),
            **{part: {str(k): v for k, v in sorted(getattr(self, part).items())}
               for part in ("chapters", "mp3")},
        })  # fmt: skip


def _intact(out: Path, record: ChapterRecord | None, sample_rate: int) -> bool:
    if record is None:
        return False
    try:
        info = sf.info(str(out / record.flac))
    except (RuntimeError, OSError):
        return False
    return info.samplerate == sample_rate and abs(info.frames / sample_rate - record.duration_s) < 1


def _has_timings(out: Path, record: ChapterRecord | None) -> bool:
    """Whether the chapter's read-along map is on disk (a render before read-along has none)."""
    if record is None or not record.flac:
        return False
    return (out / READALONG_DIR / f"{Path(str(record.flac)).stem}.json").is_file()


def deliver_review(
    out: Path,
    manifest: Manifest,
    records: Sequence[UtteranceRecord],
    config: RenderConfig,
    *,
    summary: dict[str, Any] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> tuple[Manifest, Delivery]:
    """Rebuild ``out``'s deliverables from ``records`` (the reviewed lines of ``manifest``);
    returns the manifest written and what was done. See the module docstring."""
    started = time.perf_counter()
    run_began = time.time()
    stages: dict[str, float] = {}
    clock = [started]

    def say(line: str, stage: str | None = None) -> None:
        if stage is not None:  # the step before this one ended now
            now = time.perf_counter()
            stages[stage] = round(now - clock[0], 3)
            clock[0] = now
        if on_progress:
            on_progress(line)

    say("reading the book")
    book, segments = book_segments(manifest, config, out)
    titles = {chapter.index: chapter.title for chapter in book.chapters}
    rate = int(manifest.sample_rate or 0)
    known = chapter_signatures(manifest.utterances, segments, titles, rate, config)
    held = _Held.read(out, known, mp3=bool((manifest.delivery or {}).get("mp3")))
    wanted = chapter_signatures(records, segments, titles, rate, config)
    say("assembling the chapters that changed", "read")
    recorded = {c.index: c for c in manifest.chapters}
    formats = config.production.formats
    files: list[AssembledFile] = []
    rebuilt: list[int] = []
    grouped = _chapters(records, segments)
    for position, (index, items) in enumerate(grouped.items(), 1):
        old = recorded.get(index)
        if (
            held.chapters.get(index) == wanted[index]
            and _intact(out, old, rate)
            and _has_timings(out, old)
        ):
            assert old is not None
            files.append(AssembledFile(index, old.title, old.wav, old.flac, old.duration_s))
            continue
        say(f"assembling chapter {position} of {len(grouped)}: {titles.get(index) or ''}")
        held.chapters.pop(index, None)  # unknown until its files are whole
        held.write(out)
        placed = [
            Placed(
                audio=lambda path=out / str(record.audio): sf.read(path, dtype="float32")[0],
                chapter=index,
                chapter_title=titles.get(index),
                pause_after=segment.pause_after,
                pause_before=segment.pause_before,
                segment=segment,
                key=record.audio,  # the take's own file: a kept or further take is another key
                info=record.winner_candidate.info,  # the generator's exact word timings
            )
            for record, segment in items
        ]
        files.append(write_chapter(placed, index, titles.get(index), rate, out, config.assembly,
                                   formats=formats))  # fmt: skip
        held.chapters[index] = wanted[index]
        held.write(out)
        rebuilt.append(index)
    say("writing the book files", "chapters")
    book_file = write_book_files(files, out, formats=formats)
    say("encoding the deliverables and checking them against ACX", "book_files")
    unchanged = {i for i in grouped if held.mp3.get(i) == wanted[i]}
    held.mp3 = {i: wanted[i] for i in unchanged}
    held.write(out)
    found = find_book(manifest.input, manifest.source, out)
    read_along = read_along_input(book, str(found), config)
    delivery = deliver([*files, book_file], out, config.production, book_tags(book, config),
                       read_along, unchanged=unchanged, previous=manifest.delivery)  # fmt: skip
    if "mp3" in config.production.formats:
        held.mp3 = dict(wanted)
    write_json_atomic(out / "acx.json", delivery["acx"])
    say("writing the manifest and the report", "deliverables")
    extra = dict(manifest.extra)
    if extra.get("pronunciations"):
        extra["pronunciations"] = _reviewed_words(out, extra["pronunciations"], summary, config)
    updated = replace(
        manifest,
        utterances=tuple(records),
        chapters=tuple(
            ChapterRecord(f.index, f.title, f.wav, f.flac, f.duration_s)
            for f in files
            if f.index is not None
        ),  # fmt: skip
        book=BookRecord(book_file.wav, book_file.flac, book_file.duration_s),
        delivery=delivery,
        review=summary if summary is not None else manifest.review,
        source=book_source(found, out),  # where the book is now
        extra=extra,
    )
    write_manifest(out, updated)
    write_index(out, updated)  # the review opens a long book from it
    write_render_report(out, updated)
    held.write(out)
    remove_interrupted_writes(output_folders(out), older_than=run_began)
    say("delivered", "manifest")
    made = [m["path"] for kind in ("m4b", "mp3") for m in delivery.get(kind, [])]
    return updated, Delivery(
        rebuilt=tuple(rebuilt),
        kept=tuple(i for i in grouped if i not in rebuilt),
        files=tuple(made),
        acx_passed=delivery.get("acx", {}).get("passed"),
        seconds=round(time.perf_counter() - started, 3),
        stages=stages,
    )
