"""Plain-text books in: a Project Gutenberg style ``.txt`` into chapters of readable blocks.

:func:`parse_plaintext` finds the book in the file: it drops the Project Gutenberg header and
licence, cuts the text into blank-line separated paragraphs, and finds chapter headings (``CHAPTER
I.``, ``Chapter 1``, ``CHAPTER THE FIRST``, ``BOOK II``, or bare numerals on a line of their own
as some editions print them, with or without a title on the same or the next line) and unnumbered
sections (``PREFACE``, ``INTRODUCTION``, ``EPILOGUE``...; :mod:`verified_tts.text.
plaintext_headings`). Headings are read as a listener expects
them, "Chapter I. Under the Southern Pines" (spoken "Chapter one. ..."). What comes before the first
heading (title page, credits, dedication), tables of contents and lists of illustrations anywhere,
a repeated half-title, and whatever follows ``THE END`` (advertisements) are left out of the audio
(``keep_extras`` reads all but the contents lists and the Gutenberg boilerplate); editorial
brackets are skipped, emphasis and capitals unmarked, hard-wrapped lines joined and line-end
hyphens mended (:mod:`verified_tts.text.plaintext_inline`). Everything left out is listed in
:attr:`PlainTextBook.skipped` with its source lines. The result goes through the same sentence,
normalisation and pause code as Markdown and EPUB (:func:`~verified_tts.text.book.
book_from_document`).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from verified_tts.errors import UserError
from verified_tts.text.book import Book, book_from_document
from verified_tts.text.markdown_book import Block, BlockKind, Document, Section
from verified_tts.text.plaintext_headings import (
    BREAK,
    Paragraph,
    find_headings,
    is_list_entry,
)
from verified_tts.text.plaintext_inline import (
    EDITORIAL,
    clean,
    erase_drawn_braces,
    join_lines,
    title_case,
    uncap,
    vocabulary,
)
from verified_tts.text.textfile import read_text_file

__all__ = ["PlainTextBook", "PlainTextDocument", "ends_book", "load_plaintext", "parse_plaintext"]

_START = re.compile(r"^\s*\*{3}\s*START OF (?:THE|THIS) PROJECT GUTENBERG", re.IGNORECASE)
_END = re.compile(
    r"^\s*(?:\*{3}\s*END OF (?:THE|THIS) PROJECT GUTENBERG|End of (?:the )?Project Gutenberg)",
    re.IGNORECASE,
)
_HEADER_FIELD = re.compile(r"^(Title|Author):\s*(.+)$")
_LISTS = re.compile(
    r"^(?:table of )?contents\.?$|^(?:list of )?illustrations\.?$|^index\.?$", re.IGNORECASE
)
_THE_END = re.compile(r"^\W*the end\W*$", re.IGNORECASE)
_DIALOGUE_OPENERS = ('"', "“", "”", "'", "‘", "«", "»", "„", "—", "―", "--")


@dataclass(frozen=True)
class PlainTextBook:
    """The parsed book and what was left out of the audio, one "lines A-B: what" entry each."""

    book: Book
    skipped: tuple[str, ...]


def ends_book(text: str) -> bool:
    """Whether a paragraph is a book's closing "THE END", after which the reader reads nothing
    (unless ``keep_extras``)."""
    return bool(_THE_END.match(text))


def _body(lines: list[str]) -> tuple[int, int, list[str]]:
    """(first, end) line indexes of the book between the Gutenberg header and footer."""
    first, end, skipped = 0, len(lines), []
    for index, line in enumerate(lines[:400]):
        if _START.match(line) or (index < 3 and line.rstrip().endswith("***")):
            first = index + 1
    if first:
        skipped.append(f"lines 1-{first}: Project Gutenberg header")
    for index in range(first, len(lines)):
        if _END.match(lines[index]):
            end = index
            skipped.append(f"lines {index + 1}-{len(lines)}: Project Gutenberg footer and licence")
            break
    return first, end, skipped


def _paragraphs(lines: list[str], first: int, end: int) -> list[Paragraph]:
    out, current = [], []
    for index in range(first, end):
        line = lines[index].rstrip()
        if line.strip():
            current.append((index + 1, line))
        elif current:
            out.append(Paragraph(tuple(current)))
            current = []
    if current:
        out.append(Paragraph(tuple(current)))
    return out


def _merge_brackets(paragraphs: list[Paragraph]) -> list[Paragraph]:
    """An editorial bracket that runs over blank lines ("[Music: ...", blank, "...]") made one
    paragraph, so that it is skipped whole (at most five paragraphs are joined)."""
    out: list[Paragraph] = []
    index = 0
    while index < len(paragraphs):
        merged = paragraphs[index]
        text = merged.flat
        opened = text.startswith("[") and EDITORIAL.match(text + "]") and "]" not in text
        ahead = index + 1
        while opened and ahead < len(paragraphs) and ahead - index <= 5:
            merged = Paragraph(merged.lines + paragraphs[ahead].lines)
            ahead += 1
            if "]" in merged.flat:
                index = ahead - 1
                break
        out.append(merged if opened and "]" in merged.flat else paragraphs[index])
        index += 1
    return out


def _front_fields(paragraphs: list[Paragraph], lines: list[str]) -> tuple[str | None, str | None]:
    """The book's title and author: from a Gutenberg header, else from the title page (the first
    paragraph in capitals and the "by NAME" after it)."""
    fields = {}
    for line in lines[:60]:
        match = _HEADER_FIELD.match(line.strip())
        if match:
            fields.setdefault(match.group(1).lower(), match.group(2).strip())
    if "title" in fields:
        return fields["title"], fields.get("author")
    title = author = None
    for position, paragraph in enumerate(paragraphs[:40]):
        text = paragraph.flat
        if re.match(r"(produced|e-text|etext|transcriber|note|\[)", text, re.IGNORECASE):
            continue
        letters = [c for c in text if c.isalpha()]
        if title is None and letters and all(c.isupper() for c in letters) and len(text) < 80:
            title = title_case(text)
            continue
        if title is not None:
            by = re.match(r"^by\b\s*(.*)$", text, re.IGNORECASE)
            if by:
                name = by.group(1) or (
                    paragraphs[position + 1].flat if position + 1 < len(paragraphs) else ""
                )
                author = title_case(name.strip(" =_")) or None
                break
    return title, author


@dataclass(frozen=True)
class PlainTextDocument:
    """What :func:`parse_plaintext` finds: the document, its author and what was left out."""

    document: Document
    author: str | None
    skipped: tuple[str, ...]


class _Extras:
    """Line ranges left out as front matter or back matter, merged while contiguous."""

    def __init__(self) -> None:
        self.ranges: list[list[object]] = []

    def add(self, what: str, paragraph: Paragraph) -> None:
        if self.ranges and self.ranges[-1][0] == what:
            self.ranges[-1][2] = paragraph.last
        else:
            self.ranges.append([what, paragraph.first, paragraph.last])

    def lines(self) -> list[str]:
        out = [f"lines {a}-{b}: {what}" for what, a, b in self.ranges]
        if out:
            out.append("(--keep-extras reads the front matter and what follows THE END)")
        return out


def parse_plaintext(source: str, *, keep_extras: bool = False) -> PlainTextDocument:
    """Parse a plain-text book into its title and chapters; see the module docstring."""
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first, end, skipped = _body(lines)
    paragraphs = _merge_brackets(_paragraphs(lines, first, end))
    title, author = _front_fields(paragraphs, lines)
    words = vocabulary("\n".join(lines[first:end]))
    headings = find_headings(paragraphs)
    opening = min((i for i, h in headings.items() if h.kind in ("chapter", "section")), default=0)
    extras = _Extras()
    sections: list[Section] = []
    blocks: list[Block] = []
    section_title: str | None = None
    section_line: int | None = None
    pending: list[Block] = []  # "Book II" above a chapter: read at the start of that chapter
    index = 0
    in_list = after_end = False
    while index < len(paragraphs):
        paragraph = paragraphs[index]
        text = paragraph.flat
        where = f"lines {paragraph.first}-{paragraph.last}"
        heading = headings.get(index)
        if index < opening or after_end:
            index += 1
            if not keep_extras:
                extras.add("front matter" if index <= opening else "after THE END", paragraph)
                continue
            heading = None
        elif heading is not None and not (in_list and heading.kind == "section" and
                                           _list_follows(paragraphs, index)):  # fmt: skip
            in_list = False
            if heading.kind in ("chapter", "section"):
                if blocks or section_title:
                    sections.append(Section(section_title, section_line, tuple(blocks)))
                section_title, section_line, blocks = heading.text, paragraph.first, pending
                pending = []
            block = Block("heading", heading.text, paragraph.first, ((0, paragraph.first),))
            (pending if heading.kind == "part" else blocks).append(block)
            index += heading.paragraphs
            continue
        else:
            index += 1
        if _LISTS.match(text):
            in_list = True
            skipped.append(f"{where}: {text.rstrip('.').lower()} list")
            continue
        if in_list and is_list_entry(paragraph):
            continue
        in_list = False
        if BREAK.match(text):
            continue
        half_title = title_case(text) == title and not paragraph.lines[0][1][:1].isspace()
        if title and half_title and index in headings:
            skipped.append(f"{where}: the book's title repeated")
            continue
        after_end = after_end or ends_book(text)
        block = _block(paragraph, words, skipped)
        if block is not None:
            blocks.append(block)
    if blocks or section_title:
        sections.append(Section(section_title, section_line, tuple(blocks)))
    return PlainTextDocument(Document(title, tuple(sections)), author,
                             tuple(skipped + extras.lines()))  # fmt: skip


def _list_follows(paragraphs: list[Paragraph], index: int) -> bool:
    """Whether the paragraph after ``index`` is a list entry rather than prose."""
    return index + 1 < len(paragraphs) and is_list_entry(paragraphs[index + 1])


def _block(paragraph: Paragraph, words: Counter[str], skipped: list[str]) -> Block | None:
    joined = join_lines(erase_drawn_braces(paragraph.lines), words)
    for removed in clean(joined):
        shown = " ".join(removed.split())
        shown = shown if len(shown) <= 70 else shown[:70] + "..."
        skipped.append(f"lines {paragraph.first}-{paragraph.last}: {shown}")
    text = uncap(joined.text)
    if not any(c.isalnum() for c in text):
        return None
    kind: BlockKind = "dialogue" if text.startswith(_DIALOGUE_OPENERS) else "paragraph"
    return Block(kind, text, paragraph.first, joined.starts)


def load_plaintext(
    path: str | os.PathLike[str],
    *,
    max_chars: int = 250,
    keep_extras: bool = False,
    dialogue: bool = False,
    threshold: float | None = None,
) -> PlainTextBook:
    """Read and parse the plain-text book at ``path``; user mistakes raise one-line UserErrors.
    ``dialogue`` reads quoted speech apart from the narration (:func:`book_from_document`), a
    speaker guess below ``threshold`` left to the dialogue voice."""
    path = Path(path)
    source = read_text_file(
        path,
        kind="book",
        expected="a UTF-8 plain-text book (e.g. book.txt)",
        empty_hint="write the book's text in it, paragraphs separated by blank lines",
    )
    parsed = parse_plaintext(source, keep_extras=keep_extras)
    book = book_from_document(
        parsed.document, max_chars=max_chars, dialogue=dialogue, threshold=threshold
    )
    if not book.chapters:
        raise UserError(
            f"{path} has nothing to read aloud (front matter, contents lists and editorial "
            "brackets are skipped); add paragraphs of text, or --keep-extras to read front matter"
        )
    return PlainTextBook(replace(book, author=parsed.author), parsed.skipped)
