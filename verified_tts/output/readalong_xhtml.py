"""The read-along EPUB's text: the book's own XHTML with an element around every sentence, or
XHTML made from the book's segments.

:func:`mark_document` edits an EPUB content document as text, inserting ``<span id=...>`` and
``</span>`` at the file offsets the reader recorded for each sentence (and word), so everything
else in the file (styles, images, notes, structure) stays byte for byte. An element may not
cross another's boundary, so a sentence that does (it starts inside ``<em>`` and ends after it,
or runs over the lines of a stanza, each its own ``<div>``) is wrapped in pieces, one per
stretch inside a single parent; a phrasing element that lies wholly inside the sentence (a note
reference, an ``<em>``) stays inside its span. Pieces after the first take the id with ``-2``,
``-3``; the overlay gives each piece its share of the sentence's clip. Ids that the document
already uses are avoided. :func:`generated_document` writes a chapter of a Markdown or plain-text
book (or the credits) as XHTML: headings and paragraphs from the segments' blocks, each sentence
and word its own span.
"""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "GeneratedSentence",
    "Mark",
    "Piece",
    "generated_document",
    "mark_document",
    "upgrade_doctype",
]

# Elements a <span> may hold (HTML phrasing content); anything else is cut around.
_PHRASING = {
    "a", "abbr", "b", "bdi", "bdo", "br", "cite", "code", "data", "del", "dfn", "em", "i", "img",
    "ins", "kbd", "mark", "q", "ruby", "rb", "rt", "rp", "rtc", "s", "samp", "small", "span",
    "strong", "sub", "sup", "time", "u", "var", "wbr", "audio", "video", "canvas",
    "math", "svg", "object", "label", "output", "meter", "progress", "noscript", "script",
    "template", "font", "tt", "big", "acronym", "strike",
}  # fmt: skip
_TOKEN = re.compile(
    r"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<\?.*?\?>|<!DOCTYPE[^>\[]*(?:\[.*?\])?\s*>"
    r"|</\s*([A-Za-z_][\w:.-]*)\s*>"
    r"|<([A-Za-z_][\w:.-]*)(?:\s+[^\s=/>]+(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s\"'>]+))?)*\s*(/?)>",
    re.DOTALL | re.IGNORECASE,
)
_ID = re.compile(r"\sid\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_DOCTYPE = re.compile(r"<!DOCTYPE[^>\[]*(?:\[.*?\])?\s*>", re.DOTALL | re.IGNORECASE)
_HEAD_END = re.compile(r"</\s*head\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class Mark:
    """Text ``[start, end)`` of the file (its offsets) to wrap, with the marks inside it."""

    id: str
    start: int
    end: int
    children: tuple[Mark, ...] = ()
    css_class: str | None = None


@dataclass(frozen=True)
class Piece:
    """One element a mark became: its id and how many characters of text it holds."""

    id: str
    chars: int


@dataclass
class _Element:
    name: str
    open_start: int
    open_end: int
    close_start: int | None = None  # None: an empty element, or one never closed
    close_end: int | None = None
    children: list[int] = field(default_factory=list)


class _Tree:
    """The tags of an XML document as offsets: which element each tag opens or closes."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.elements: list[_Element] = []
        self.at: dict[int, tuple[str, int]] = {}  # tag start -> ("open"|"close"|"empty", element)
        self.ends: dict[int, int] = {}  # tag start -> tag end, for every markup token
        stack: list[int] = []
        for match in _TOKEN.finditer(text):
            self.ends[match.start()] = match.end()
            closing, opening, empty = match.group(1), match.group(2), match.group(3)
            if opening:
                number = len(self.elements)
                self.elements.append(_Element(opening.lower(), match.start(), match.end()))
                if empty:
                    self.at[match.start()] = ("empty", number)
                else:
                    self.at[match.start()] = ("open", number)
                    stack.append(number)
            elif closing:
                name = closing.lower()
                for depth in range(len(stack) - 1, -1, -1):
                    if self.elements[stack[depth]].name == name:
                        for unclosed in stack[depth + 1 :]:
                            self.elements[unclosed].close_start = match.start()
                            self.elements[unclosed].close_end = match.start()
                        element = self.elements[stack[depth]]
                        element.close_start, element.close_end = match.start(), match.end()
                        self.at[match.start()] = ("close", stack[depth])
                        del stack[depth:]
                        break
        self.tag_starts = sorted(self.ends)

    def pieces(self, start: int, end: int) -> list[tuple[int, int]]:
        """``[start, end)`` cut into stretches that each lie in one parent and hold only whole
        phrasing elements."""
        out: list[tuple[int, int]] = []
        piece = start
        position = bisect.bisect_left(self.tag_starts, start)
        while position < len(self.tag_starts) and self.tag_starts[position] < end:
            tag = self.tag_starts[position]
            kind, number = self.at.get(tag, ("other", -1))
            element = self.elements[number] if number >= 0 else None
            if element is not None and kind in ("open", "empty"):
                whole = kind == "empty" or (element.close_end or end + 1) <= end
                if whole and element.name in _PHRASING:
                    skip_to = self.ends[tag] if kind == "empty" else int(element.close_end or 0)
                    position = bisect.bisect_left(self.tag_starts, skip_to)
                    continue
                out.append((piece, tag))
                piece = self.ends[tag]
            elif kind == "close":
                out.append((piece, tag))
                piece = self.ends[tag]
            position += 1
        out.append((piece, end))
        trimmed = (self._trim(a, b) for a, b in out)
        return [(a, b) for a, b in trimmed if b > a and self.visible(a, b)]

    def _trim(self, start: int, end: int) -> tuple[int, int]:
        """The stretch without whitespace at its edges (where the edge is text)."""
        text = self.text
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        return start, end

    def visible(self, start: int, end: int) -> int:
        """Characters of text (not markup) in ``[start, end)``, entities counted once."""
        stripped = re.sub(r"<[^>]*>", "", self.text[start:end])
        return len("".join(html.unescape(stripped).split()))


def _used_ids(text: str) -> set[str]:
    return {a or b for a, b in _ID.findall(text)}


def _prefix(text: str, marks: Sequence[Mark]) -> str:
    """A prefix for our ids that no id of the document starts with."""
    used = _used_ids(text)
    ours = [m.id for mark in marks for m in (mark, *mark.children)]
    prefix = ""
    while any(f"{prefix}{name}" in used for name in ours):
        prefix = f"rt{prefix}-" if prefix else "rt-"
    return prefix


def mark_document(
    text: str, marks: Sequence[Mark], *, stylesheet: str | None = None
) -> tuple[str, dict[str, list[Piece]]]:
    """``text`` with every mark wrapped (ids prefixed where the document already uses them),
    and each mark's pieces by its id. ``stylesheet``: an href to link from ``<head>``."""
    tree = _Tree(text)
    prefix = _prefix(text, marks)
    inserts: list[tuple[int, int, int, str]] = []  # (offset, order, depth, markup)
    pieces: dict[str, list[Piece]] = {}

    def add(mark: Mark, depth: int) -> None:
        stretches = tree.pieces(mark.start, mark.end)
        made = pieces.setdefault(mark.id, [])
        css = f' class="{mark.css_class}"' if mark.css_class else ""
        for number, (a, b) in enumerate(stretches):
            name = f"{prefix}{mark.id}" if number == 0 else f"{prefix}{mark.id}-{number + 1}"
            inserts.append((a, 1, depth, f'<span id="{name}"{css}>'))
            inserts.append((b, 0, -depth, "</span>"))
            made.append(Piece(name, tree.visible(a, b)))
        for child in mark.children:
            add(child, depth + 1)

    for mark in marks:
        add(mark, 0)
    if stylesheet:
        head = _HEAD_END.search(text)
        if head:
            link = f'<link rel="stylesheet" type="text/css" href="{html.escape(stylesheet)}"/>'
            inserts.append((head.start(), -1, 0, link))
    inserts.sort(key=lambda item: (item[0], item[1], item[2]))
    out, last = [], 0
    for offset, _, _, markup in inserts:
        out.append(text[last:offset])
        out.append(markup)
        last = offset
    out.append(text[last:])
    return "".join(out), pieces


def upgrade_doctype(text: str) -> str:
    """An XHTML 1.1 document (EPUB 2) with the HTML5 doctype that EPUB 3 content documents
    carry; everything else as it was."""
    return _DOCTYPE.sub("<!DOCTYPE html>", text, count=1)


@dataclass(frozen=True)
class GeneratedSentence:
    id: str
    text: str
    block: int  # sentences of one block share a paragraph or heading
    heading: bool
    word_ids: tuple[str, ...] = ()  # one per whitespace-separated word, when words are marked


def generated_document(
    title: str | None,
    sentences: Sequence[GeneratedSentence],
    *,
    language: str,
    stylesheet: str,
) -> tuple[str, dict[str, list[Piece]]]:
    """An XHTML content document of ``sentences``; each sentence is one piece."""
    esc = html.escape
    body: list[str] = []
    pieces: dict[str, list[Piece]] = {}
    headings = 0
    for block in _blocks(sentences):
        parts = []
        for sentence in block:
            words = sentence.text.split()
            if sentence.word_ids and len(sentence.word_ids) == len(words):
                inner = " ".join(
                    f'<span id="{w}">{esc(word)}</span>'
                    for w, word in zip(sentence.word_ids, words, strict=True)
                )
                for w, word in zip(sentence.word_ids, words, strict=True):
                    pieces[w] = [Piece(w, len(word))]
            else:
                inner = esc(sentence.text)
            parts.append(f'<span id="{sentence.id}">{inner}</span>')
            pieces[sentence.id] = [Piece(sentence.id, len("".join(sentence.text.split())))]
        tag = ("h1" if headings == 0 else "h2") if block[0].heading else "p"
        headings += block[0].heading
        body.append(f"<{tag}>{' '.join(parts)}</{tag}>")
    lang = esc(language)
    document = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html>\n'
        f'<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" '
        f'lang="{lang}" xml:lang="{lang}">\n'
        f'<head><meta charset="utf-8"/><title>{esc(title or "Chapter")}</title>'
        f'<link rel="stylesheet" type="text/css" href="{esc(stylesheet)}"/></head>\n'
        '<body><section epub:type="chapter">\n' + "\n".join(body) + "\n</section></body>\n</html>\n"
    )
    return document, pieces


def _blocks(sentences: Sequence[GeneratedSentence]) -> list[list[GeneratedSentence]]:
    blocks: list[list[GeneratedSentence]] = []
    for sentence in sentences:
        if blocks and blocks[-1][0].block == sentence.block:
            blocks[-1].append(sentence)
        else:
            blocks.append([sentence])
    return blocks
