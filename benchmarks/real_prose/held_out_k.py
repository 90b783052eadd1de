"""The tenth held-out sample (``held_out_k``): over a thousand real-prose lines no sample has read.

The nine samples of ``real_prose.py`` and the pronunciation benchmark's (every held-out chapter
from the 231st utterance on) have read nearly every held-out line of the three books: what is left
is the 36th to the 40th utterance of the chapters the first and second samples took, and the 2nd
to the 40th of the five ``katrine`` chapters that none of the first three took (285 lines). So the
split's rule is applied to more books: the seven novels of the Project Dialogism Novel Corpus
beside the books (``../shared/data/pdnc/``, public-domain texts) that the plain-text reader cuts
into numbered chapters (``Daisy Miller`` has two parts and ``Hard Times`` books of unnumbered
chapters, so they are left out). Of each novel's n numbered chapters the first ceil(n/2) are
development and the rest held out, as for the three books; no TTS benchmark has read them.

The sample, fixed before any of its lines was rendered or read: (1) every unread held-out line of
the three books, as above, each chapter after its heading; (2) of each of the seven novels, six
held-out chapters spread evenly over its held-out part (first to last, as ``real_prose.py``
spreads them), the heading and the first 20 utterances after it of each. The headings of the
three books' chapters were read by earlier samples; the figures count them as lines (26 of them).

Usage as a library::

    from benchmarks.real_prose.held_out_k import write_held_out_k
    write_held_out_k(Path("held_out_k.txt"))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from benchmarks.real_prose.real_prose import (
    BOOKS,
    DATA,
    SAMPLE_CHAPTERS,
    _spread,
    book_chapters,
    chapters_of,
    write_checked,
)
from verified_tts.text.book import Book, Chapter, Segment

__all__ = ["NOVELS", "PDNC", "held_out_k_segments", "novel", "novel_chapters", "write_held_out_k"]

PDNC = DATA.parent / "pdnc"
NOVELS = (
    "ARoomWithAView", "AlicesAdventuresInWonderland", "AnneOfGreenGables", "Emma",
    "NorthangerAbbey", "Persuasion", "TheAwakening",
)  # fmt: skip
NOVEL_CHAPTERS = 6  # held-out chapters of each novel
NOVEL_LINES = 20  # utterances after each chapter's heading
READ_UP_TO = 40  # the fourth and later samples read every held-out chapter from the 41st on
# utterances per chapter the first, second and third samples read (real_prose.PER_CHAPTER)
FIRST_SAMPLES = {"held_out": 35, "held_out_b": 35, "held_out_c": 40}

Sample = list[tuple[str, Chapter, list[Segment]]]


@cache
def novel(name: str) -> Book:
    """One of :data:`NOVELS` as the plain-text reader reads it."""
    from verified_tts.text.plaintext import load_plaintext

    path = PDNC / name / "novel_text.txt"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: the corpus lives in ../shared/data/pdnc")
    return load_plaintext(path).book


def novel_chapters(name: str, part: str) -> list[Chapter]:
    """The development (first ceil(n/2) numbered chapters) or held-out (the rest) of a novel."""
    chapters = book_chapters(novel(name))
    cut = math.ceil(len(chapters) / 2)
    return chapters[:cut] if part == "dev" else chapters[cut:]


def _read_before(name: str) -> dict[int, int]:
    """Utterances of each held-out chapter (by index) that the first three samples read."""
    held = chapters_of(name, "held_out")
    first = _spread(held, SAMPLE_CHAPTERS)
    rest = [c for c in held if all(c is not f for f in first)]
    second = _spread(rest, SAMPLE_CHAPTERS)
    third = [c for c in rest if all(c is not s for s in second)]
    read: dict[int, int] = {}
    for chapters, count in ((first, 35), (second, 35), (_spread(third, SAMPLE_CHAPTERS), 40)):
        for chapter in chapters:
            read[chapter.index] = max(read.get(chapter.index, 0), count)
    return read


def held_out_k_segments() -> Sample:
    """(book, chapter, its heading and sampled utterances), in book order (module docstring)."""
    out: Sample = []
    for name in BOOKS:
        read = _read_before(name)
        for chapter in chapters_of(name, "held_out"):
            segments = list(chapter.segments)
            heading = [s for s in segments[:1] if s.kind == "heading"]
            lines = segments[max(1, read.get(chapter.index, 1)) : READ_UP_TO]
            if lines:
                out.append((name, chapter, heading + lines))
    for name in NOVELS:
        for chapter in _spread(novel_chapters(name, "held_out"), NOVEL_CHAPTERS):
            segments = list(chapter.segments)
            heading = [s for s in segments[:1] if s.kind == "heading"]
            lines = segments[len(heading) : len(heading) + NOVEL_LINES]
            out.append((name, chapter, heading + lines))
    return out


def write_held_out_k(path: Path) -> Sample:
    """Write the sample as a ``.txt`` book and check it reads back as the same utterances."""
    return write_checked(path, held_out_k_segments())


def chapters_listed(samples: Sequence[tuple[str, Chapter, list[Segment]]]) -> list[list[object]]:
    """[book, chapter title, utterances] of each chapter of a sample, for a result file."""
    return [[name, chapter.title, len(segments)] for name, chapter, segments in samples]
