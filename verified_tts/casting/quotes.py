"""The quotes of a book's decoded text, with character offsets, in chapters of paragraphs.

:func:`scan_text` cuts a text into blank-line separated paragraphs (a text with no blank lines:
one paragraph a line), each kept with its offset into the text so a quote found in it
(:func:`verified_tts.text.dialogue.scan_paragraph`) has ``start`` and ``end`` as Python string
indices into the whole text, the quote marks left out. A heading line (CHAPTER I, Chapter 2,
VOLUME II, a bare Roman numeral) starts a new chapter, where the sieve forgets who was talking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from verified_tts.text.dialogue import ParagraphQuotes, quote_style, scan_paragraph

__all__ = ["ScannedParagraph", "quote_bounds", "scan_text"]

_HEADING = re.compile(
    r"^\s*(?:(?:CHAPTER|Chapter|BOOK|Book|VOLUME|Volume|PART|Part)\s+[\w.]+.*|[IVXLC]+\.?)\s*$"
)
_MARKS = "\"“”'‘’«»„"


@dataclass(frozen=True)
class ScannedParagraph:
    """One paragraph: ``text == book[start:start + len(text)]`` and its quotes' spans."""

    start: int
    text: str
    quotes: ParagraphQuotes


def quote_bounds(paragraph: ScannedParagraph, index: int) -> tuple[int, int]:
    """(start, end) in the book of the ``index``-th span's words, without the outer marks and
    the punctuation after the closing one."""
    span = paragraph.quotes.spans[index]
    text = paragraph.text
    start, end = span.start, span.end
    while start < end and (text[start] in _MARKS or text[start].isspace()):
        start += 1
    close = max((text.rfind(m, start, end) for m in _MARKS), default=-1)
    if span.closed and close > start:
        end = close
    while end > start and text[end - 1].isspace():
        end -= 1
    return paragraph.start + start, paragraph.start + end


def _paragraphs(text: str) -> list[tuple[int, str]]:
    splitter = r"\n[ \t]*\n\s*" if re.search(r"\n[ \t]*\n", text) else r"\n\s*"
    found, cursor = [], 0
    for match in re.finditer(splitter, text):
        found.append((cursor, text[cursor : match.start()]))
        cursor = match.end()
    found.append((cursor, text[cursor:]))
    return [(start, piece) for start, piece in found if piece.strip()]


def _heading(piece: str) -> bool:
    """A chapter heading, with its title on the same line or the lines after ("Chapter VI: The
    Reverend Arthur Beebe ... Drive Out in Carriages")."""
    first = piece.strip().split("\n", 1)[0]
    if not _HEADING.match(first):
        return False
    return "\n" not in piece.strip() or (len(piece) < 400 and not re.search(r"[\"“”]", piece))


def headings(text: str) -> list[str]:
    """The text's chapter headings with their titles ("Chapter VI: Miss Clara Pryor Walks
    Out"), where a book may write a name in full that it never writes elsewhere."""
    return [piece for _, piece in _paragraphs(text) if _heading(piece)]


def scan_text(text: str) -> list[list[ScannedParagraph]]:
    """The text's paragraphs with their quotes, per chapter (headings themselves left out)."""
    pieces = _paragraphs(text)
    style = quote_style(piece for _, piece in pieces)
    chapters: list[list[ScannedParagraph]] = [[]]
    after_open = False
    for start, piece in pieces:
        if _heading(piece):
            if chapters[-1]:
                chapters.append([])
            after_open = False
            continue
        quotes = scan_paragraph(piece, style=style, after_open=after_open)
        after_open = quotes.open_at_end
        chapters[-1].append(ScannedParagraph(start, piece, quotes))
    return [chapter for chapter in chapters if chapter]
