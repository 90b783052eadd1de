"""The Project Gutenberg novels of the attribution benchmark, cut into chapters and paragraphs.

A small reader for the three books in ``/work/shared/data/books`` (``katrine.txt``,
``log-school-house.txt``, ``little-colonels-hero.txt``): the chapter headings each book uses, the
paragraphs between blank lines with their lines joined and ``_emphasis_`` marks dropped, each
paragraph with the file offset of every character, so an annotated quote names the place in the
file it came from. :func:`document` turns chapters into the text front-end's
:class:`~verified_tts.text.markdown_book.Document`, so the benchmark runs the same dialogue and
attribution code a render does. For each book the first ``ceil(n/2)`` chapters are for developing
the rules and the last ``floor(n/2)`` are held out for measuring them (:func:`held_out`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from verified_tts.text.markdown_book import Block, Document, Section

__all__ = ["BOOKS", "BOOKS_DIR", "Chapter", "Paragraph", "development", "document", "held_out",
           "read_chapters"]  # fmt: skip

BOOKS_DIR = Path("/work/shared/data/books")
# book -> (line that starts the story, heading pattern, line that ends it)
BOOKS = {
    "katrine.txt": (153, re.compile(r"^([IVXL]+)$"), "THE END"),
    "log-school-house.txt": (181, re.compile(r"^CHAPTER ([IVXL]+)\.?$"), "HISTORICAL NOTES."),
    "little-colonels-hero.txt": (172, re.compile(r"^CHAPTER ([IVXL]+)\.?$"), "THE END."),
}


@dataclass(frozen=True)
class Paragraph:
    text: str  # lines joined by single spaces, emphasis marks dropped
    line: int  # 1-based file line of its first character
    offsets: tuple[int, ...]  # file offset (characters) of each character of ``text``
    lines: tuple[int, ...]  # file line of each character of ``text``


@dataclass(frozen=True)
class Chapter:
    number: str  # the roman numeral of its heading
    title: str
    paragraphs: tuple[Paragraph, ...]


def _paragraphs(lines: list[tuple[int, int, str]]) -> list[Paragraph]:
    """Blank-line separated paragraphs of (line number, file offset, text) lines."""
    paragraphs, text, offsets, numbers = [], [], [], []
    for number, offset, line in [*lines, (0, 0, "")]:
        if not line.strip():
            if text:
                paragraphs.append(Paragraph("".join(text), numbers[0], tuple(offsets),
                                            tuple(numbers)))  # fmt: skip
            text, offsets, numbers = [], [], []
            continue
        start = len(line) - len(line.lstrip())
        if text:
            text.append(" ")
            offsets.append(offset + start - 1)
            numbers.append(number)
        previous_space = False
        for index, char in enumerate(line.rstrip()[start:], start):
            if char == "_":
                continue
            if char.isspace():
                if previous_space:
                    continue
                char = " "
            previous_space = char == " "
            text.append(char)
            offsets.append(offset + index)
            numbers.append(number)
    return paragraphs


def read_chapters(book: str) -> list[Chapter]:
    """The chapters of ``book`` (a file name in :data:`BOOKS`), in order."""
    first, heading, end = BOOKS[book]
    source = (BOOKS_DIR / book).read_text(encoding="utf-8")
    lines, offset = [], 0
    for number, line in enumerate(source.split("\n"), 1):
        lines.append((number, offset, line))
        offset += len(line) + 1
    chapters: list[tuple[str, list[tuple[int, int, str]]]] = []
    for number, offset, line in lines[first - 1 :]:
        if line.strip() == end:
            break
        match = heading.match(line.strip())
        if match:
            chapters.append((match.group(1), []))
        elif chapters:
            chapters[-1][1].append((number, offset, line))
    result = []
    for numeral, body in chapters:
        paragraphs = _paragraphs(body)
        result.append(Chapter(numeral, paragraphs[0].text, tuple(paragraphs[1:])))
    return result


def held_out(book: str) -> list[Chapter]:
    """The last ``floor(n/2)`` chapters: annotated and measured, never used to write the rules."""
    chapters = read_chapters(book)
    return chapters[len(chapters) - len(chapters) // 2 :]


def development(book: str) -> list[Chapter]:
    """The first ``ceil(n/2)`` chapters, on which the rules were written."""
    chapters = read_chapters(book)
    return chapters[: len(chapters) - len(chapters) // 2]


def document(chapters: list[Chapter]) -> Document:
    """The chapters as the text front-end's document: a heading and a block a paragraph."""
    sections = []
    for chapter in chapters:
        blocks = [Block("heading", f"{chapter.number}. {chapter.title}", 0)]
        for paragraph in chapter.paragraphs:
            starts = tuple(
                (index, line)
                for index, line in enumerate(paragraph.lines)
                if index == 0 or line != paragraph.lines[index - 1]
            )
            blocks.append(Block("paragraph", paragraph.text, paragraph.line, starts))
        sections.append(Section(chapter.title, None, tuple(blocks)))
    return Document(None, tuple(sections))
