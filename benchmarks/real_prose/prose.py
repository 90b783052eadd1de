"""Real prose for benchmarks: the plain-text novels' chapters, split into development and held out.

Each book in ``--books`` (by default /work/shared/data/books, public-domain Project Gutenberg
texts) is cut into chapters at headings on a line of their own ("CHAPTER IV.", or a bare roman
numeral in a book without such headings); the licence text after "End of the Project Gutenberg"
is dropped. The first ceil(n/2) chapters of a book of n are for development (tuning settings),
the rest are held out (the figures reported). :func:`prose_book` writes a Markdown book of
sentences taken evenly from one part: one sentence of 5 to 40 words from each chosen paragraph, a
paragraph each and no headings (a heading such as "CHAPTER IV." is read "chapter four", which a
WER counts as wrong), so a benchmark renders real sentences from across the part rather than one
chapter.
Each benchmark imports this module as ``benchmarks.real_prose.prose``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

__all__ = ["BOOKS", "book_chapters", "prose_book", "split_chapters"]

BOOKS = Path("/work/shared/data/books")
_HEADING = re.compile(r"^\s*(?:CHAPTER\s+)?([IVXLC]+)\.?\s*$")
_END = re.compile(r"^\s*End of (?:the )?Project Gutenberg", re.IGNORECASE)
_MIN_LINES = 30  # a "chapter" shorter than this is a contents entry, not a chapter


def book_chapters(path: Path) -> list[tuple[str, str]]:
    """(heading, text) of each chapter of a plain-text book, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    ends = next((i for i, line in enumerate(lines) if _END.match(line)), len(lines))
    starts = [i for i, line in enumerate(lines[:ends]) if _HEADING.match(line)]
    # where chapters say "CHAPTER", a bare numeral heads a section of an appendix
    if any("CHAPTER" in lines[i] for i in starts):
        starts = [i for i in starts if "CHAPTER" in lines[i]]
    chapters = []
    for number, start in enumerate(starts):
        stop = starts[number + 1] if number + 1 < len(starts) else ends
        body = lines[start + 1 : stop]
        if sum(1 for line in body if line.strip()) >= _MIN_LINES:
            chapters.append((lines[start].strip(), "\n".join(body)))
    return chapters


def split_chapters(chapters: list, part: str) -> list:
    """The development (first ceil(n/2)) or held-out (the rest) chapters."""
    cut = math.ceil(len(chapters) / 2)
    if part == "dev":
        return chapters[:cut]
    if part == "heldout":
        return chapters[cut:]
    raise ValueError(f"part must be 'dev' or 'heldout', not {part!r}")


def _paragraphs(text: str) -> list[str]:
    blocks = re.split(r"\n\s*\n", text)
    paragraphs = [" ".join(line.strip() for line in block.splitlines()) for block in blocks]
    # illustrations, scene breaks and indented verse are not prose
    return [p for p in paragraphs if len(p) > 60 and not p.startswith(("[", "*"))]


def _sentence(paragraph: str) -> str | None:
    from verified_tts.text.sentences import split_sentences

    for sentence in split_sentences(paragraph):
        words = len(sentence.split())
        if 5 <= words <= 40 and "_" not in sentence:
            return sentence.strip()
    return None


def prose_book(
    path: Path, part: str, per_book: int, *, books: Path = BOOKS
) -> tuple[Path, dict[str, list[str]]]:
    """A Markdown book of ``per_book`` sentences from each book's ``part``; also which chapters
    each book contributed."""
    sections, used = [], {}
    for book in sorted(books.glob("*.txt")):
        chapters = split_chapters(book_chapters(book), part)
        paragraphs = [(title, p) for title, text in chapters for p in _paragraphs(text)]
        step = max(1, len(paragraphs) // per_book)
        chosen: list[tuple[str, str]] = []
        for title, paragraph in paragraphs[::step]:
            sentence = _sentence(paragraph)
            if sentence and len(chosen) < per_book:
                chosen.append((title, sentence))
        used[book.stem] = [title for title, _ in chapters]
        sections += [sentence for _, sentence in chosen]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join(sections) + "\n", encoding="utf-8")
    return path, used
