"""The timing map of a render: every sentence's and word's chapter, start and end.

Sentence timings are exact: assembly knows where each winner lies in its chapter file to the
sample (:class:`~verified_tts.output.assembly.PlacedClip`). Word timings come from
:mod:`verified_tts.output.word_timing`, counted from the winner's own first sample and moved to
the chapter by the clip's place less the silence assembly trimmed from its head (clamped to the
clip). :func:`chapter_timings` makes a chapter's map, :func:`write_chapter_timings` writes it
beside the chapter's other read-along files (``readalong/NN-title.json``), and
:func:`write_book_timings` joins the chapters into ``timings.json`` for other tools. Aligned word
timings are cached per winner (:class:`WordCache`), so re-assembling a chapter aligns only
winners it has not seen.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verified_tts.output.assembly import AssembledFile, PlacedClip
from verified_tts.output.word_timing import TimedClip, WordAligner, WordTiming, word_timings
from verified_tts.storage.atomic import write_json_atomic

__all__ = [
    "READALONG_DIR",
    "TIMINGS_FILE",
    "TIMINGS_FORMAT",
    "ChapterTimings",
    "SentenceTiming",
    "WordCache",
    "chapter_timings",
    "chapter_words",
    "read_chapter_timings",
    "sentence_id",
    "write_book_timings",
    "write_chapter_timings",
]

TIMINGS_FORMAT = "verified-tts timings 1"
TIMINGS_FILE = "timings.json"
READALONG_DIR = "readalong"


def sentence_id(chapter: int, number: int) -> str:
    """The id of a chapter's sentence (0-based), as the XHTML, SMIL and captions name it."""
    return f"c{chapter}-s{number + 1}"


@dataclass(frozen=True)
class SentenceTiming:
    """One sentence (one winner) in its chapter file: samples ``[start, end)``, and its words
    in seconds from the chapter file's start."""

    id: str
    text: str
    start: int
    end: int
    sample_rate: int
    words: tuple[WordTiming, ...] = ()
    # the segment's place in its chapter (Segment.paragraph, Segment.sentence)
    paragraph: int | None = None
    number: int | None = None

    @property
    def start_s(self) -> float:
        return self.start / self.sample_rate

    @property
    def end_s(self) -> float:
        return self.end / self.sample_rate

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "start_s": round(self.start_s, 6),
            "end_s": round(self.end_s, 6),
            "start_sample": self.start,
            "end_sample": self.end,
            "paragraph": self.paragraph,
            "sentence": self.number,
            "words": [
                {
                    "id": f"{self.id}-w{k + 1}",
                    "word": w.word,
                    "start_s": round(w.start_s, 4),
                    "end_s": round(w.end_s, 4),
                    "source": w.source,
                }
                for k, w in enumerate(self.words)
            ],
        }


@dataclass(frozen=True)
class ChapterTimings:
    """A chapter's sentences, and the chapter file they are timed against."""

    index: int
    title: str | None
    audio: str  # the chapter master, relative to the output folder
    sample_rate: int
    duration_s: float
    sentences: tuple[SentenceTiming, ...]

    @property
    def stem(self) -> str:
        return Path(self.audio).stem

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "title": self.title,
            "audio": self.audio,
            "sample_rate": self.sample_rate,
            "duration_s": self.duration_s,
            "sentences": [s.to_json() for s in self.sentences],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChapterTimings:
        rate = int(data["sample_rate"])
        sentences = tuple(
            SentenceTiming(
                s["id"],
                s["text"],
                int(s["start_sample"]),
                int(s["end_sample"]),
                rate,
                tuple(
                    WordTiming(w["word"], float(w["start_s"]), float(w["end_s"]), w["source"])
                    for w in s.get("words", ())
                ),
                s.get("paragraph"),
                s.get("sentence"),
            )
            for s in data["sentences"]
        )
        return cls(
            int(data["index"]), data.get("title"), data["audio"], rate,
            float(data["duration_s"]), sentences,
        )  # fmt: skip


class WordCache:
    """Aligned word timings per winner and text, in ``readalong/words.json``; entries of
    another aligner (a different model) are not used."""

    def __init__(self, path: Path, identity: Mapping[str, Any]) -> None:
        self.path = path
        self.identity = dict(identity)
        self.entries: dict[str, list[list[Any]]] = {}
        self.changed = False
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = {}
            if data.get("aligner") == self.identity:
                self.entries = dict(data.get("entries", {}))

    @staticmethod
    def key(candidate: str | None, text: str) -> str:
        return f"{candidate}|{text}"

    def get(self, candidate: str | None, text: str) -> list[WordTiming] | None:
        entry = self.entries.get(self.key(candidate, text)) if candidate else None
        return [WordTiming(w, float(a), float(b), s) for w, a, b, s in entry] if entry else None

    def put(self, candidate: str | None, text: str, timings: Sequence[WordTiming]) -> None:
        if candidate:
            rows = [[t.word, round(t.start_s, 4), round(t.end_s, 4), t.source] for t in timings]
            self.entries[self.key(candidate, text)] = rows
            self.changed = True

    def save(self) -> None:
        if self.changed:
            write_json_atomic(self.path, {"aligner": self.identity, "entries": self.entries})
            self.changed = False


def _timed(clip: PlacedClip, rate: int) -> TimedClip:
    segment = clip.item.segment
    return TimedClip(
        text=segment.text if segment else "",
        spoken=segment.spoken if segment else "",
        audio=clip.item.load,
        sample_rate=rate,
        info=clip.item.info,
    )


def chapter_words(
    files: Sequence[AssembledFile],
    aligner: Callable[[], WordAligner] | None,
    cache: WordCache | None = None,
) -> dict[int, list[list[WordTiming]]]:
    """Word timings of every winner of the chapters ``files``, clip by clip (relative to each
    winner's own start), taking the generator's exact ones and aligning the rest in one batch
    (none without an ``aligner``: those clips get no words)."""
    wanted: list[tuple[int, int, PlacedClip]] = []
    out: dict[int, list[list[WordTiming]]] = {}
    for file in files:
        if file.index is None:
            continue
        out[file.index] = [[] for _ in file.clips]
        for number, clip in enumerate(file.clips):
            text = clip.item.segment.text if clip.item.segment else ""
            cached = cache.get(clip.item.key, text) if cache else None
            if cached is not None:
                out[file.index][number] = cached
            elif text:
                wanted.append((file.index, number, clip))
    if wanted:
        rates = {f.index: int(f.sample_rate or 0) for f in files}
        clips = [_timed(clip, rates[index]) for index, _, clip in wanted]
        for (index, number, clip), timings in zip(
            wanted, word_timings(clips, aligner), strict=True
        ):
            out[index][number] = timings
            if cache is not None and any(t.source != "generator" for t in timings):
                cache.put(
                    clip.item.key, clip.item.segment.text if clip.item.segment else "", timings
                )
    return out


def chapter_timings(
    file: AssembledFile, words: Sequence[Sequence[WordTiming]] | None = None
) -> ChapterTimings:
    """The timing map of one assembled chapter; ``words``: each clip's word timings (relative
    to the winner's own start), or None for sentences only."""
    if file.index is None or not file.flac or not file.sample_rate:
        raise ValueError("chapter_timings takes an assembled chapter, not the book file")
    rate = file.sample_rate
    sentences = []
    for number, clip in enumerate(file.clips):
        offset = (clip.start - clip.trimmed) / rate
        low, high = clip.start / rate, clip.end / rate
        shifted = tuple(
            WordTiming(
                w.word,
                min(max(w.start_s + offset, low), high),
                min(max(w.end_s + offset, low), high),
                w.source,
            )
            for w in (words[number] if words is not None else ())
        )
        segment = clip.item.segment
        sentences.append(
            SentenceTiming(
                sentence_id(file.index, number),
                segment.text if segment else "",
                clip.start,
                clip.end,
                rate,
                shifted,
                segment.paragraph if segment else None,
                segment.sentence if segment else None,
            )
        )
    return ChapterTimings(
        file.index, file.title, file.flac, rate, file.duration_s, tuple(sentences)
    )


def write_chapter_timings(out_dir: Path, chapter: ChapterTimings) -> str:
    """``readalong/NN-title.json``; returns its path relative to ``out_dir``."""
    relative = f"{READALONG_DIR}/{chapter.stem}.json"
    write_json_atomic(out_dir / relative, chapter.to_json())
    return relative


def read_chapter_timings(out_dir: Path, stem: str) -> ChapterTimings | None:
    path = out_dir / READALONG_DIR / f"{stem}.json"
    if not path.is_file():
        return None
    return ChapterTimings.from_json(json.loads(path.read_text(encoding="utf-8")))


def write_book_timings(out_dir: Path, chapters: Sequence[ChapterTimings], *, words: bool) -> str:
    """``timings.json``: every chapter's sentences (and words) with start and end."""
    write_json_atomic(
        out_dir / TIMINGS_FILE,
        {
            "format": TIMINGS_FORMAT,
            "words": words,  # whether word timings were asked for (--read-along words)
            "chapters": [c.to_json() for c in chapters],
        },
    )
    return TIMINGS_FILE
