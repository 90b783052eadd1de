"""The real-prose development and held-out split that every real-book benchmark uses.

Three public-domain novels as Project Gutenberg plain text (../shared/data/books/: ``katrine``, 28
chapters headed by bare roman numerals; ``log-school-house``, 18; ``little-colonels-hero``, 16, in
heavy dialect) are read with the project's own plain-text reader. Of each book's n numbered
chapters, the first ceil(n/2) are the development set (tune anything on them) and the rest are
held out: nothing is tuned on them, and the held-out figures of a benchmark come from them alone.
``held_out_b`` is a second held-out sample for a rule chosen after the first was looked at: its
chapters are the held-out chapters the first sample does not use, spread the same way.
``held_out_c`` is a third, for the changes made after the second was looked at: the held-out
chapters neither of the others uses, spread the same way (two for the shortest book), and
:data:`PER_CHAPTER` utterances of each so that it too holds more than 300.
``held_out_d`` is a fourth, read only once the code and settings the third measured were fixed:
lines no sample has read, from every held-out chapter, 10 utterances each from the 41st on (the
others read at most a chapter's first 40), after the chapter's heading, which one of them read.
``held_out_e`` is a fifth, read only once the stop setting chosen for the real-time factor was
fixed (docs/research/real-prose.md tells each step): the next lines no sample has read, 20
utterances each from the 51st on, after the chapter's heading (the headings, read before, are
short and few). ``held_out_f`` is a sixth, read only once the code that keeps both cores busy was
fixed: the 71st to the 90th utterance of every held-out chapter, after its heading.
``held_out_g`` is a seventh, read only once Piper's planar convolutions were fixed: the 91st to
the 110th utterance of every held-out chapter, after its heading.
``held_out_h`` is an eighth, read only once the verifiers on their own threads were fixed: the
111th to the 130th. ``held_out_i`` is a ninth, sized for a test of the judged gain that a sample
passes nine times in ten at the gain the fifth to eighth show together
(benchmarks/real_prose/gain_pooled.py): up to 100 utterances of every held-out chapter from the
131st on, after its heading. Prefaces and notes outside the numbered chapters belong to neither. A
benchmark renders a sample: the first ``per_chapter`` utterances (heading included) of ``chapters``
chapters per book, spread evenly over that book's part (first, middle and last by default), written
as a plain-text book (:func:`write_sample`) that the reader parses back into exactly those
utterances, so the sample is rendered as a user renders a ``.txt`` (docs/real-prose.md).

Usage as a library::

    from benchmarks.real_prose.real_prose import sample_segments, write_sample
    write_sample(Path("held_out.txt"), "held_out")
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from verified_tts.text.book import Book, Chapter, Segment
from verified_tts.text.plaintext import ends_book

__all__ = [
    "BOOKS",
    "DATA",
    "PARTS",
    "PER_CHAPTER",
    "START",
    "CHAPTERS",
    "Part",
    "book_chapters",
    "chapters_of",
    "load",
    "sample_segments",
    "sample_text",
    "write_sample",
]

ROOT = Path(__file__).resolve().parents[2]
# ../shared beside the checkout (a worktree under wt/ looks one folder further up)
DATA = next(
    (p / "shared" / "data" / "books" for p in ROOT.parents if (p / "shared" / "data").is_dir()),
    ROOT.parent / "shared" / "data" / "books",
)
BOOKS = ("katrine", "log-school-house", "little-colonels-hero")
Part = Literal[
    "dev", "held_out", "held_out_b", "held_out_c", "held_out_d", "held_out_e", "held_out_f",
    "held_out_g", "held_out_h", "held_out_i",
]
PARTS: tuple[Part, ...] = (
    "dev", "held_out", "held_out_b", "held_out_c", "held_out_d", "held_out_e", "held_out_f",
    "held_out_g", "held_out_h", "held_out_i",
)  # fmt: skip
SAMPLE_CHAPTERS = 3  # chapters per book in a sample (the first held-out sample's spread)
# utterances per chapter in a sample; the third held-out sample has 8 chapters, not 9
PER_CHAPTER: dict[str, int] = {
    "dev": 35, "held_out": 35, "held_out_b": 35, "held_out_c": 40, "held_out_d": 10,
    "held_out_e": 20, "held_out_f": 20, "held_out_g": 20, "held_out_h": 20,
    "held_out_i": 100,
}  # fmt: skip
# where in each chapter a part's utterances start (after the heading), and its chapters per book
START: dict[str, int] = {
    "held_out_d": 40, "held_out_e": 50, "held_out_f": 70, "held_out_g": 90, "held_out_h": 110,
    "held_out_i": 130,
}  # fmt: skip
# parts that leave out a chapter with no lines in their range instead of reading its heading alone
# (a heading with its title on the line, followed by the next chapter's, reads back as two lines)
LINES_OR_NOTHING = frozenset({"held_out_h", "held_out_i"})
CHAPTERS: dict[str, int] = {
    "held_out_d": 99, "held_out_e": 99, "held_out_f": 99, "held_out_g": 99, "held_out_h": 99,
    "held_out_i": 99,
}  # fmt: skip


@functools.cache
def load(name: str) -> Book:
    """One of :data:`BOOKS` as the plain-text reader reads it (once a process: a book is frozen,
    and the samples of every part read the same books)."""
    from verified_tts.text.plaintext import load_plaintext

    path = DATA / f"{name}.txt"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: the real-prose books live in ../shared/data/books")
    return load_plaintext(path).book


def book_chapters(book: Book) -> list[Chapter]:
    """The numbered chapters, in order (the preface and appended notes are not among them)."""
    return [c for c in book.chapters if (c.title or "").startswith("Chapter ")]


def chapters_of(name: str, part: Part) -> list[Chapter]:
    """The development (first ceil(n/2)) or held-out (the rest) numbered chapters of a book."""
    chapters = book_chapters(load(name))
    cut = math.ceil(len(chapters) / 2)
    if part == "dev":
        return chapters[:cut]
    held_out = chapters[cut:]
    if part == "held_out" or part in START:  # the parts that read a range of every chapter
        return held_out
    first = {id(c) for c in _spread(held_out, SAMPLE_CHAPTERS)}
    rest = [c for c in held_out if id(c) not in first]
    if part == "held_out_b":
        return rest
    if part == "held_out_c":
        second = {id(c) for c in _spread(rest, SAMPLE_CHAPTERS)}
        return [c for c in rest if id(c) not in second]
    raise ValueError(f"unknown part {part!r}: one of {', '.join(PARTS)}")


def _spread(items: Sequence[Chapter], count: int) -> list[Chapter]:
    if count >= len(items):
        return list(items)
    if count == 1:
        return [items[0]]
    return [items[round(i * (len(items) - 1) / (count - 1))] for i in range(count)]


def sample_segments(
    part: Part, *, per_chapter: int = 35, chapters: int = SAMPLE_CHAPTERS,
    books: Sequence[str] = BOOKS, start: int = 0,
) -> list[tuple[str, Chapter, list[Segment]]]:
    """(book, chapter, its first ``per_chapter`` segments) for ``chapters`` chapters per book of
    ``part``, spread over the part; from ``start`` on, after the chapter's heading, if given."""
    out = []
    for name in books:
        for chapter in _spread(chapters_of(name, part), chapters):
            segments = list(chapter.segments)
            if start:
                heading = [s for s in segments[:1] if s.kind == "heading"]
                lines = segments[start : start + per_chapter]
                if not lines and part in LINES_OR_NOTHING:
                    continue
                segments = heading + lines
            else:
                segments = segments[:per_chapter]
            out.append((name, chapter, segments))
    # a book's closing "The End" stops the reader: inside a sample, where other chapters follow,
    # it would end the sample early
    last = out[-1][2][-1] if out and out[-1][2] else None
    return [
        (name, chapter, [s for s in segments if s is last or not ends_book(s.text)])
        for name, chapter, segments in out
    ]


def sample_text(samples: Sequence[tuple[str, Chapter, list[Segment]]]) -> str:
    """A plain-text book whose chapters are the samples: each chapter's heading line, then each
    segment as its own paragraph (the reader parses it back into the same texts)."""
    paragraphs = []
    for _, chapter, segments in samples:
        for segment in segments:
            paragraphs.append(segment.text)
        if segments and segments[0].kind != "heading":
            paragraphs.insert(len(paragraphs) - len(segments), chapter.title or "")
    return "\n\n".join(paragraphs) + "\n"


def write_sample(
    path: Path, part: Part, *, per_chapter: int = 35, chapters: int = SAMPLE_CHAPTERS,
    start: int = 0,
) -> list[tuple[str, Chapter, list[Segment]]]:
    """Write the sample of ``part`` as a ``.txt`` book and check that it reads back as the same
    utterances (text and spoken form); returns the samples."""
    samples = sample_segments(part, per_chapter=per_chapter, chapters=chapters, start=start)
    return write_checked(path, samples)


def write_checked(
    path: Path, samples: list[tuple[str, Chapter, list[Segment]]]
) -> list[tuple[str, Chapter, list[Segment]]]:
    """Write ``samples`` as a ``.txt`` book and stop unless it reads back as the same utterances
    (text and spoken form); returns the samples."""
    from verified_tts.text.plaintext import load_plaintext

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(sample_text(samples), encoding="utf-8")
    back = [(s.text, s.spoken) for s in load_plaintext(path).book.segments]
    wanted = [(s.text, s.spoken) for _, _, segments in samples for s in segments]
    if back != wanted:
        first = next(
            (i for i, (a, b) in enumerate(zip(back, wanted, strict=False)) if a != b),
            min(len(back), len(wanted)),
        )
        raise SystemExit(
            f"{path} does not read back as the sampled utterances (first difference at "
            f"utterance {first}: {back[first:first + 1]} vs {wanted[first:first + 1]})"
        )
    return samples
