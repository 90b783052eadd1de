"""Chapter headings of a plain-text book: which paragraphs are headings, and how they are read.

:func:`find_headings` looks at a book's blank-line separated paragraphs (:class:`Paragraph`) and
returns the headings it finds by paragraph index: numbered chapters (``CHAPTER I.``, ``Chapter
1``, ``CHAPTER THE FIRST``, ``Chapter 12: Rain``; ``BOOK II`` and ``PART ONE`` as parts, which
start chapters only in a book without chapter headings), bare numerals on a line of their own
when they count up from one (chapters in a book that has no chapter headings, sub-headings in one
that does), and unnumbered sections (``PREFACE``, ``INTRODUCTION``, ``HISTORICAL NOTES``...). A
title on the heading's line or on the next short line is taken with it, and a heading is read
as a listener expects it: "Chapter I. Under the Southern Pines". The entries of a contents list
that repeat the chapters' own headings are not headings. :mod:`verified_tts.text.plaintext`
builds the book from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from verified_tts.text.normalize import roman_to_int
from verified_tts.text.plaintext_inline import title_case

__all__ = ["BREAK", "TERMINAL", "Heading", "Paragraph", "find_headings", "is_list_entry"]

_NUMBER_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty first second third fourth "
    "fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth fifteenth "
    "sixteenth seventeenth eighteenth nineteenth twentieth thirtieth fortieth last"
)
_NUMBER = rf"(?:[IVXLCDM]+|\d+|(?:THE\s+)?(?:{'|'.join(_NUMBER_WORDS.split())})(?:-\w+)?)"
_CHAPTER_WORDS = "chapter|chap|book|part|volume|vol|stave|canto|letter"
_NUMBERED = re.compile(
    rf"^(?P<word>{_CHAPTER_WORDS})\.?\s+(?P<number>{_NUMBER})\b\.?"
    r"(?:\s*[.:\-—]+\s*(?P<title>\S.*?))?\s*$",
    re.IGNORECASE,
)
_BARE = re.compile(r"^(?P<number>[IVXLC]+|\d{1,3})\.?$")
_SECTION = re.compile(
    r"^(?P<title>preface|foreword|introduction|prologue|epilogue|afterword|postscript|conclusion|"
    r"historical notes|notes|appendix|author's note|to the reader|introductory)\.?$",
    re.IGNORECASE,
)
BREAK = re.compile(r"^[\s*.·•\-=_~#]+$")
TERMINAL = re.compile(r"[.!?…][\"'”’»)\]]*$")


@dataclass(frozen=True)
class Paragraph:
    lines: tuple[tuple[int, str], ...]  # (1-based line number, raw text)

    @property
    def first(self) -> int:
        return self.lines[0][0]

    @property
    def last(self) -> int:
        return self.lines[-1][0]

    @property
    def flat(self) -> str:
        return " ".join(" ".join(text.split()) for _, text in self.lines).strip()


@dataclass(frozen=True)
class Heading:
    kind: str  # "chapter", "part", "bare" or "section"
    text: str  # as read: "Chapter I. Under the Southern Pines"
    number: int | None
    paragraphs: int  # paragraphs it took (2 with a title on the next one)


def _title_line(paragraph: Paragraph | None) -> str | None:
    """The chapter title a heading's next paragraph holds, if it is one: one or two short lines,
    in capitals, or in mixed case without a sentence's closing punctuation."""
    if paragraph is None or len(paragraph.lines) > 2:
        return None
    text = paragraph.flat
    if len(text) > 100 or _NUMBERED.match(text) or _BARE.match(text) or BREAK.match(text):
        return None
    letters = [c for c in text if c.isalpha()]
    if letters and all(c.isupper() for c in letters):
        return text.rstrip(".")
    if len(text.split()) <= 10 and not TERMINAL.search(text) and not text.endswith((",", ";")):
        return text
    return None


def _number_value(number: str) -> int | None:
    if number.isdigit():
        return int(number)
    return roman_to_int(number)


def _heading(paragraphs: list[Paragraph], index: int) -> Heading | None:
    paragraph = paragraphs[index]
    if len(paragraph.lines) > 2 or len(paragraph.flat) > 100:
        return None
    text = paragraph.flat
    following = paragraphs[index + 1] if index + 1 < len(paragraphs) else None
    numbered = _NUMBERED.match(text)
    if numbered:
        word = numbered.group("word").lower().rstrip(".")
        word = {"chap": "chapter", "vol": "volume"}.get(word, word)
        number = numbered.group("number")
        if not number.isdigit():
            ordinal = re.match(r"(?i)the\s+", number)
            number = ("the " if ordinal else "") + title_case(number[ordinal.end() if ordinal
                                                                     else 0:].upper())  # fmt: skip
        title = numbered.group("title")
        taken = 1
        if title is None:
            title = _title_line(following)
            taken = 2 if title else 1
        kind = "chapter" if word in ("chapter", "letter", "stave", "canto") else "part"
        spoken = f"{word.capitalize()} {number}"
        if title:
            spoken += f". {title_case(title.rstrip('.'))}"
        return Heading(kind, spoken, _number_value(numbered.group("number")), taken)
    bare = _BARE.match(text)
    if bare and len(paragraph.lines) == 1:
        title = _title_line(following)
        numeral = bare.group("number")
        value = _number_value(numeral)
        if value is None:
            return None
        spoken = f"{numeral}. {title_case(title.rstrip('.'))}" if title else numeral
        return Heading("bare", spoken, value, 2 if title else 1)
    section = _SECTION.match(text)
    if section and len(paragraph.lines) == 1 and not any(c.islower() for c in text[:1]):
        return Heading("section", title_case(text.rstrip(".").upper()), None, 1)
    return None


def _bare_run(headings: dict[int, Heading]) -> set[int]:
    """Bare numerals that number chapters: runs counting up from 1 (1, 2, 3, ...)."""
    keep: set[int] = set()
    run: list[int] = []
    for index in sorted(i for i, h in headings.items() if h.kind == "bare"):
        value = headings[index].number
        if value == 1:
            run = [index]
        elif run and value == headings[run[-1]].number + 1:
            run.append(index)
        else:
            continue
        if len(run) >= 2:
            keep.update(run)
    return keep


def is_list_entry(paragraph: Paragraph) -> bool:
    """A paragraph of a contents list or a list of illustrations, not prose."""
    text = paragraph.flat
    return len(paragraph.lines) <= 3 and (len(text) < 200 or not TERMINAL.search(text))


def _contents_entries(headings: dict[int, Heading], paragraphs: list[Paragraph]) -> set[int]:
    """Chapter headings that are entries of a contents list: their number comes again later,
    and another heading follows them at once or their line ends with a page number."""
    chapters = sorted(i for i, h in headings.items() if h.kind == "chapter")
    entries = set()
    for position, index in enumerate(chapters):
        number = headings[index].number
        later = any(headings[j].number == number for j in chapters[position + 1 :])
        after = index + headings[index].paragraphs
        listed = after in headings or re.search(r"\s\d+$", paragraphs[index].flat)
        if later and listed:
            entries.add(index)
    return entries


def find_headings(paragraphs: list[Paragraph]) -> dict[int, Heading]:
    found = {i: h for i in range(len(paragraphs)) if (h := _heading(paragraphs, i))}
    for index in _contents_entries(found, paragraphs):
        del found[index]
    bare = _bare_run(found)
    has_chapters = any(h.kind == "chapter" for h in found.values())
    headings = {}
    for index, heading in found.items():
        if heading.kind == "bare" and index not in bare:
            continue
        if heading.kind == "bare" and not has_chapters:
            heading = replace(heading, kind="chapter", text=f"Chapter {heading.text}")
        elif heading.kind == "part" and not has_chapters:
            heading = replace(heading, kind="chapter")
        headings[index] = heading
    return headings
