"""Quoted speech in a paragraph: which stretches of its text are dialogue and which narration.

:func:`scan_paragraph` finds the quotes of one paragraph (a block's text, from any reader: Markdown,
EPUB, plain text) and returns :class:`Span` s that cover it in order, each dialogue or narration.
Double quotes are the outer marks unless a book sets its speech in single ones
(:func:`quote_style` decides from the whole book); the other kind nests inside and stays part of
the quote. Straight marks open or close by what surrounds them ("said, "Go" and"), curly ones by
their shape, and an apostrophe (don't, 'tis, the boys') never opens a single-quoted line. A quote
left open at the end of a paragraph and opened again at the start of the next is one speech over
both (the printer's convention for a speech of several paragraphs): pass the previous paragraph's
:attr:`ParagraphQuotes.open_at_end` as ``after_open`` and the next one's first span says it
``continues``. A short quote set inside a sentence after a plain word (called it "the old
place", the word "love", a title) is not speech and stays in the narration around it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "SPEECH_VERBS",
    "ParagraphQuotes",
    "QuoteStyle",
    "Span",
    "quote_style",
    "scan_paragraph",
]

QuoteStyle = Literal["double", "single"]

# Verbs that introduce or tag speech ("said Anne", "he replied"); also used by the attribution.
_VERBS = """
    said says say saying asked asks answered answers replied replies cried cries exclaimed
    exclaims whispered whispers muttered mutters murmured murmurs shouted shouts called calls
    continued continues added adds began begins repeated repeats retorted retorts returned returns
    demanded demands inquired inquires enquired queried responded responds remarked remarks
    observed observes declared declares protested protests pleaded pleads begged begs urged urges
    insisted insists explained explains suggested suggests admitted admits agreed agrees
    interrupted interrupts interposed laughed laughs sighed sighs sobbed groaned moaned gasped
    screamed shrieked yelled roared bellowed growled snapped sneered stammered stuttered faltered
    breathed hissed drawled chuckled smiled grinned nodded went echoed mused wondered thought
    told tells ordered commanded warned announced concluded persisted ventured volunteered
    confessed assented objected corrected conceded counselled advised greeted called sang
"""
SPEECH_VERBS = frozenset(_VERBS.split())

_DOUBLE_OPEN = "“„«"
_DOUBLE_CLOSE = "”»"
_SINGLE_OPEN = "‘‚‹"
_SINGLE_CLOSE = "’›"
# Elisions written with a leading apostrophe: a mark before them opens no quote.
_ELISIONS = ("tis", "twas", "twere", "twill", "twould", "em", "cause", "til", "till", "n", "ere",
             "bout", "im", "er", "ow", "nuff", "spose", "ud", "ave", "appen")  # fmt: skip
_TERMINAL = re.compile(r"[.!?…]")
_LEADING_CLOSERS = re.compile(r"[\s,;:.!?…)\]]+")
_WORD_BEFORE = re.compile(r"([A-Za-z]+)\W*$")


@dataclass(frozen=True)
class Span:
    """A stretch ``text[start:end]`` of a paragraph (no surrounding whitespace)."""

    start: int
    end: int
    dialogue: bool
    continues: bool = False  # dialogue that goes on from the previous paragraph's open quote
    closed: bool = True  # dialogue whose closing mark is in this paragraph


@dataclass(frozen=True)
class ParagraphQuotes:
    """The spans of one paragraph, and whether its last quote is still open at its end."""

    spans: tuple[Span, ...]
    open_at_end: bool = False

    @property
    def has_dialogue(self) -> bool:
        return any(span.dialogue for span in self.spans)


def quote_style(texts: Iterable[str]) -> QuoteStyle:
    """ "single" when a book opens more quotes with single marks than with double ones."""
    double = single = 0
    for text in texts:
        double += sum(text.count(mark) for mark in '"“„«')
        single += len(re.findall(r"(?:^|(?<=[\s(\[—–-]))[‘'](?=[A-Za-z])", text))
        single -= len(re.findall(r"(?:^|(?<=\s))'(?:" + "|".join(_ELISIONS) + r")\b", text, re.I))
    return "single" if single > double else "double"


def _before(text: str, index: int) -> str:
    return text[index - 1] if index > 0 else " "


def _after(text: str, index: int) -> str:
    return text[index + 1] if index + 1 < len(text) else " "


def _opens_here(text: str, index: int) -> bool:
    """A straight mark in an opening position: after a space or bracket, before a word."""
    before, after = _before(text, index), _after(text, index)
    return (before.isspace() or before in "([{—–-:") and not after.isspace()


def _closes_here(text: str, index: int) -> bool:
    before, after = _before(text, index), _after(text, index)
    return not before.isspace() and (after.isspace() or not after.isalnum())


def _is_apostrophe(text: str, index: int) -> bool:
    """A single mark inside a word (don't), or eliding a word's start ('tis, 'em)."""
    before, after = _before(text, index), _after(text, index)
    if before.isalnum() and after.isalnum():
        return True
    if not before.isalnum() and after.isalpha():
        rest = text[index + 1 : index + 8].lower()
        return any(re.match(rf"{word}\b", rest) for word in _ELISIONS)
    return False


def _marks(text: str, style: QuoteStyle) -> list[tuple[int, str]]:
    """(position, "open" | "close" | "either") of each outer quote mark of ``text``."""
    marks = []
    for index, char in enumerate(text):
        if style == "double":
            if char in _DOUBLE_OPEN:
                marks.append((index, "open"))
            elif char in _DOUBLE_CLOSE:
                # a mis-curled mark at a word's start opens ("”Hello" in some scans)
                marks.append((index, "either" if _opens_here(text, index) else "close"))
            elif char == '"':
                marks.append((index, _straight(text, index)))
        else:
            if char not in _SINGLE_OPEN + _SINGLE_CLOSE + "'" or _is_apostrophe(text, index):
                continue
            if char in _SINGLE_OPEN:
                marks.append((index, "open"))
            else:
                marks.append((index, _straight(text, index) if char == "'" else "close"))
    return marks


def _straight(text: str, index: int) -> str:
    opens, closes = _opens_here(text, index), _closes_here(text, index)
    if opens and not closes:
        return "open"
    if closes and not opens:
        return "close"
    return "either"


def _quotes(text: str, style: QuoteStyle) -> tuple[list[tuple[int, int, bool]], bool]:
    """(start, end, closed) of each outer quote, and whether the last is open at the end."""
    quotes: list[tuple[int, int, bool]] = []
    start: int | None = None
    for index, how in _marks(text, style):
        if start is None:
            if how != "close":
                start = index
            # a closing mark with nothing open is a stray (an inch mark, a typo): read through it
        elif how == "open":
            # an opening mark inside an open quote: the first was never closed
            quotes.append((start, index, False))
            start = index
        else:
            quotes.append((start, index + 1, True))
            start = None
    if start is not None:
        quotes.append((start, len(text), False))
    return quotes, start is not None


def _inline(text: str, start: int, end: int, closed: bool) -> bool:
    """A quoted word or title inside a sentence ("called it "home" and"), not speech."""
    if not closed:
        return False
    before = text[:start].rstrip()
    if not before or not before[-1].isalnum():
        return False
    word = _WORD_BEFORE.search(before)
    if word and word.group(1).lower() in SPEECH_VERBS:
        return False
    return not _TERMINAL.search(text[start + 1 : end - 1])


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def scan_paragraph(
    text: str, *, style: QuoteStyle = "double", after_open: bool = False
) -> ParagraphQuotes:
    """The dialogue and narration spans of one paragraph, in order, covering its text.

    Punctuation that follows a closing mark ("Yes", she said) stays with the quote, so the
    narration starts at its first word. ``after_open`` says the previous paragraph ended inside a
    quote: a quote that opens this paragraph then ``continues`` that speech.
    """
    quotes, open_at_end = _quotes(text, style)
    speech = [(s, e, closed) for s, e, closed in quotes if not _inline(text, s, e, closed)]
    spans: list[Span] = []
    cursor = 0
    for number, (start, end, closed) in enumerate(speech):
        if end < len(text):
            lead = _LEADING_CLOSERS.match(text, end)
            if lead and lead.group(0).strip():
                end = lead.end()
        _narration(spans, text, cursor, start)
        begin, finish = _trimmed(text, start, end)
        continues = after_open and number == 0 and not text[:start].strip()
        spans.append(Span(begin, finish, True, continues, closed))
        cursor = end
    _narration(spans, text, cursor, len(text))
    return ParagraphQuotes(tuple(spans), open_at_end)


def _narration(spans: list[Span], text: str, start: int, end: int) -> None:
    begin, finish = _trimmed(text, start, end)
    if finish > begin:
        spans.append(Span(begin, finish, False))
