"""One XHTML content document of an EPUB: its readable blocks, anchors, and what was left out.

Read with the standard library's ``html.parser`` (lenient with the broken XHTML real books
contain). Headings, paragraphs, list items and quotes are kept; an element is left out whole,
with the reason recorded, when a listener does not want it read: notes (``epub:type`` or ARIA
``role`` footnote, endnote, rearnote, note, and ``<aside>``), front matter boilerplate (cover,
title and half-title page, contents, copyright, imprint, colophon), reference lists (index,
bibliography, glossary), tables, figures, navigation, math, and hidden elements. Small marks in
running text are counted, not listed: note references (also the short numeric links to an
anchor that EPUB 2 books use), page numbers, line numbers (``class="lnum"`` and kin) and note
back-links. ``keep_extras`` reads notes, front matter and reference lists. Verse set as one
``<div>`` a line (the IDPF's "The Waste Land") is joined into one block a stanza, so a sentence
that runs over lines is one utterance. Inline SSML (``ssml:ph`` with ``ssml:alphabet``) is kept
as (written text, phonemes, alphabet) on its block, and ``<link rel="pronunciation">`` names the
document's PLS lexicons.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser

from verified_tts.text.markdown_book import BlockKind

__all__ = [
    "FRONT_TYPES",
    "Anchor",
    "ContentDocument",
    "TextBlock",
    "read_content",
]

_BLOCK_TAGS = {
    "p", "div", "li", "blockquote", "dd", "dt", "section", "article", "header", "footer",
    "main", "body", "pre", "address", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "ul", "ol",
    "hgroup", "figcaption",
}  # fmt: skip
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
# Never read, never reported: markup, styling, and the readings of ruby annotations.
_SILENT_TAGS = {"head", "script", "style", "template", "rt", "rp", "button", "img", "audio",
                "video", "object", "iframe", "embed", "input", "select", "textarea"}  # fmt: skip
_SKIPPED_TAGS = {"table": "table", "figure": "figure", "nav": "navigation", "math": "math",
                 "svg": "image (SVG)"}  # fmt: skip
_VOID = {"img", "br", "hr", "meta", "link", "input", "wbr", "col", "area", "base", "source",
         "embed", "track", "param"}  # fmt: skip
_NOTE_TYPES = {"footnote", "footnotes", "endnote", "endnotes", "rearnote", "rearnotes", "note",
               "notes", "doc-footnote", "doc-endnote", "doc-endnotes", "doc-footnotes",
               "annotation"}  # fmt: skip
FRONT_TYPES = {
    "cover": "cover", "doc-cover": "cover", "titlepage": "title page",
    "halftitlepage": "half-title page", "title-page": "title page", "toc": "contents",
    "doc-toc": "contents", "landmarks": "contents", "copyright-page": "copyright",
    "copyright": "copyright", "colophon": "colophon", "doc-colophon": "colophon",
    "imprint": "imprint", "seriespage": "series page", "other-credits": "credits",
    "imprimatur": "imprimatur", "errata": "errata", "frontispiece": "frontispiece",
    "loi": "list of illustrations", "lot": "list of tables",
}  # fmt: skip
_REFERENCE_TYPES = {"index": "index", "doc-index": "index", "bibliography": "bibliography",
                    "doc-bibliography": "bibliography", "glossary": "glossary",
                    "doc-glossary": "glossary"}  # fmt: skip
_MARKS = {"noteref": "note references", "doc-noteref": "note references",
          "annoref": "note references", "pagebreak": "page numbers",
          "doc-pagebreak": "page numbers", "backlink": "note back-links",
          "doc-backlink": "note back-links"}  # fmt: skip
_LINE_NUMBER_CLASSES = {"lnum", "linenum", "line-num", "line-number", "linenumber", "lineno"}
_VERSE_HINTS = {"linegroup", "line-group", "lg", "stanza", "verse", "poem", "poetry", "song",
                "z3998:poem", "z3998:verse", "z3998:stanza", "z3998:song", "z3998:hymn",
                "z3998:lyrics"}  # fmt: skip
_NOTE_MARK = re.compile(r"^\s*[\[(]?(\d{1,3}|[*†‡§¶]+|[ivxlc]{1,5})[\])]?\s*$", re.IGNORECASE)
_ENDS_SENTENCE = re.compile(r"[.!?…][\"'”’»)\]]*$")
_DIALOGUE_OPENERS = ('"', "“", "”", "'", "‘", "«", "»", "„", "—", "―", "--")


@dataclass(frozen=True)
class Anchor:
    """An ``id`` met in reading order ("" is the document's start). ``live`` is False for the id
    of an element that was left out: a TOC entry pointing there starts no chapter."""

    id: str
    live: bool = True


@dataclass(frozen=True)
class TextBlock:
    kind: BlockKind
    text: str
    line: int
    line_starts: tuple[tuple[int, int], ...] = ()
    phonemes: tuple[tuple[str, str, str], ...] = ()  # (written text, ssml:ph, ssml:alphabet)


@dataclass
class ContentDocument:
    """What :func:`read_content` found in one document."""

    name: str
    items: list[Anchor | TextBlock] = field(default_factory=list)
    # (id or "", why, element, words) of each element left out
    skipped: list[tuple[str, str, str, int]] = field(default_factory=list)
    marks: Counter[str] = field(default_factory=Counter)  # note references, page numbers, ...
    title: str | None = None  # the document's <title>
    lexicons: list[str] = field(default_factory=list)  # hrefs of linked PLS lexicons
    whole: str | None = None  # why the whole document (its <body>) was left out
    whole_words: int = 0


@dataclass
class _Open:
    tag: str
    skip: bool
    serial: int
    verse: bool = False
    why: str | None = None  # set on the element that began a skipped subtree
    element: str = ""
    words: int = 0
    alphabet: str | None = None
    ph: tuple[str, int, int] | None = None  # (phonemes, buffer position, flush count) at start
    has_block: bool = False


def _describe(tag: str, values: Mapping[str, str]) -> str:
    return f"{tag}#{values['id']}" if values.get("id") else tag


def _why(tag: str, values: Mapping[str, str], keep_extras: bool) -> tuple[str, bool] | None:
    """(reason, whether it is a small mark to count) for an element left out, or None."""
    kinds = set(values.get("epub:type", "").split()) | set(values.get("role", "").split())
    if tag in _SKIPPED_TAGS:
        return _SKIPPED_TAGS[tag], False
    if "hidden" in values or values.get("aria-hidden") == "true":
        return "hidden", False
    for kind in sorted(kinds):
        if kind in _MARKS and not keep_extras:
            return _MARKS[kind], True
    if set(values.get("class", "").lower().split()) & _LINE_NUMBER_CLASSES:
        return "line numbers", True
    if keep_extras:
        return None
    if kinds & _NOTE_TYPES:
        return "notes", False
    if tag == "aside":
        return "aside (a sidebar or note)", False
    for kind in sorted(kinds):
        if kind in FRONT_TYPES:
            return f"front matter: {FRONT_TYPES[kind]}", False
        if kind in _REFERENCE_TYPES:
            return f"back matter: {_REFERENCE_TYPES[kind]}", False
    return None


class _ContentParser(HTMLParser):
    def __init__(self, document: ContentDocument, keep_extras: bool, skip_ids: Mapping[str, str]):
        super().__init__(convert_charrefs=True)
        self.doc = document
        self.keep_extras = keep_extras
        self.skip_ids = skip_ids
        self.stack: list[_Open] = []
        self.serial = 0
        self.buffer: list[str] = []
        self.buffer_line = 1
        self.heading = False
        self.flushes = 0
        self.phonemes: list[tuple[str, str, str]] = []
        self.in_title = False
        self.title: list[str] = []
        self.lines: list[tuple[int, int]] = []  # (item index, parent serial) of leaf line blocks
        self.verse_parents: set[int] = set()

    @property
    def skipping(self) -> bool:
        return bool(self.stack) and self.stack[-1].skip

    def flush(self, line_of: int | None = None) -> None:
        text = " ".join("".join(self.buffer).split())
        self.buffer = []
        self.flushes += 1
        phonemes, self.phonemes = tuple(self.phonemes), []
        if text:
            kind: BlockKind = "heading" if self.heading else "paragraph"
            if kind == "paragraph" and text.startswith(_DIALOGUE_OPENERS):
                kind = "dialogue"
            if line_of is not None:
                self.lines.append((len(self.doc.items), line_of))
            self.doc.items.append(TextBlock(kind, text, self.buffer_line, (), phonemes))

    def _open_skip(self, tag: str, values: dict[str, str]) -> tuple[str, bool] | None:
        if values.get("id") in self.skip_ids:
            return self.skip_ids[values["id"]], False
        return _why(tag, values, self.keep_extras)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        parent = self.stack[-1] if self.stack else None
        if tag == "link" and "pronunciation" in values.get("rel", "").split():
            self.doc.lexicons.append(values.get("href", ""))
        if tag == "title" and not self.doc.title:
            self.in_title = True
        if self.skipping:
            if tag not in _VOID:
                self.stack.append(_Open(tag, True, -1))
            return
        silent = tag in _SILENT_TAGS
        why = None if silent else self._open_skip(tag, values)
        if values.get("id") and not silent:
            if tag in _BLOCK_TAGS:
                self.flush()
            self.doc.items.append(Anchor(values["id"], live=why is None or why[1]))
        if why is not None and why[1]:  # a mark: counted, its text dropped
            self.doc.marks[why[0]] += 1
        if tag in _BLOCK_TAGS and why is None and not silent:
            self.flush()
            self.buffer_line = self.getpos()[0]
            self.heading = tag in _HEADINGS
            if parent is not None:
                parent.has_block = True
        if tag == "br":
            self.buffer.append(" ")
        if tag in _VOID:
            return
        self.serial += 1
        hints = set(values.get("class", "").lower().split()) | set(
            values.get("epub:type", "").split()
        )
        entry = _Open(tag, silent or why is not None, self.serial, verse=bool(hints & _VERSE_HINTS))
        entry.alphabet = values.get("ssml:alphabet") or (parent.alphabet if parent else None)
        if why is not None:
            entry.why, entry.element = why[0], _describe(tag, values)
            if why[1]:
                entry.why = None  # counted already
        if values.get("ssml:ph") and not entry.skip:
            entry.ph = (values["ssml:ph"], len(self.buffer), self.flushes)
        if entry.verse:
            self.verse_parents.add(self.serial)
        if tag == "a" and not entry.skip and not self.keep_extras and "#" in values.get("href", ""):
            # A short numeric or symbol link to an anchor is a note reference (EPUB 2 books
            # rarely mark them): decided when its text is known.
            self.buffer.append("\0")
        self.stack.append(entry)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "link" and "pronunciation" in values.get("rel", "").split():
            self.doc.lexicons.append(values.get("href", ""))
        if self.skipping:
            return
        why = None if tag in _SILENT_TAGS else self._open_skip(tag, values)
        if why is not None and why[1]:
            self.doc.marks[why[0]] += 1
        if values.get("id"):
            self.doc.items.append(Anchor(values["id"], live=why is None or why[1]))
        if tag == "br":
            self.buffer.append(" ")
        elif tag in ("hr", "p", "div"):
            self.flush()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if tag in _VOID:
            return
        # Close up to the matching open tag (broken XHTML leaves some open).
        for position in range(len(self.stack) - 1, -1, -1):
            if self.stack[position].tag == tag:
                closed = self.stack[position]
                del self.stack[position:]
                break
        else:
            return
        if closed.why is not None:
            self._record(closed)
        if closed.skip:
            return
        if tag == "a" and "\0" in self.buffer:
            start = len(self.buffer) - 1 - self.buffer[::-1].index("\0")
            if _NOTE_MARK.match("".join(self.buffer[start + 1 :])):
                self.doc.marks["note references"] += 1
                del self.buffer[start:]
            else:
                del self.buffer[start]
        if closed.ph is not None and closed.ph[2] == self.flushes:
            written = " ".join("".join(self.buffer[closed.ph[1] :]).split())
            if written:
                self.phonemes.append((written, closed.ph[0], closed.alphabet or "ipa"))
        if tag in _BLOCK_TAGS and not self.skipping:
            leaf_line = tag in ("div", "p") and not closed.has_block and self.stack
            self.flush(self.stack[-1].serial if leaf_line else None)
            self.heading = False

    def _record(self, closed: _Open) -> None:
        if closed.tag == "body":
            self.doc.whole, self.doc.whole_words = closed.why, closed.words
        elif closed.words and closed.why:
            tag, _, anchor = closed.element.partition("#")
            self.doc.skipped.append((anchor, closed.why, tag, closed.words))

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        if self.skipping:
            for entry in reversed(self.stack):
                if entry.why is not None:
                    entry.words += len(data.split())
                    break
            return
        if not "".join(self.buffer).strip():
            self.buffer_line = self.getpos()[0]
        self.buffer.append(data)

    def close(self) -> None:
        super().close()
        self.flush()
        while self.stack:  # elements left open at the end of a broken document
            closed = self.stack.pop()
            if closed.why is not None:
                self._record(closed)
        self.doc.title = " ".join("".join(self.title).split()) or None


def _is_verse(lines: list[TextBlock], hinted: bool) -> bool:
    if len(lines) < (2 if hinted else 3):
        return False
    if hinted:
        return True
    ended = sum(bool(_ENDS_SENTENCE.search(line.text)) for line in lines)
    return all(len(line.text) <= 90 for line in lines) and ended * 2 < len(lines)


def _join_verse(parser: _ContentParser) -> None:
    """Join runs of one-line ``<div>``/``<p>`` blocks under one parent into a stanza block."""
    items = parser.doc.items
    runs: list[list[int]] = []
    last_parent = None
    for index, parent in parser.lines:
        previous = runs[-1][-1] if runs else -1
        between = items[previous + 1 : index] if runs else []
        if runs and parent == last_parent and all(isinstance(i, Anchor) for i in between):
            runs[-1].append(index)
        else:
            runs.append([index])
        last_parent = parent
    parents = dict(parser.lines)
    merged: dict[int, TextBlock | None] = {}
    for run in runs:
        lines = [items[i] for i in run]
        assert all(isinstance(line, TextBlock) for line in lines)
        blocks = [line for line in lines if isinstance(line, TextBlock)]
        if any(b.kind == "heading" for b in blocks):
            continue
        if not _is_verse(blocks, parents[run[0]] in parser.verse_parents):
            continue
        text, starts, phonemes = "", [], []
        for block in blocks:
            starts.append((len(text) + (1 if text else 0), block.line))
            text = f"{text} {block.text}" if text else block.text
            phonemes.extend(block.phonemes)
        merged[run[0]] = TextBlock(
            blocks[0].kind, text, blocks[0].line, tuple(starts), tuple(phonemes)
        )
        for index in run[1:]:
            merged[index] = None
    if merged:
        parser.doc.items = [
            merged.get(i, item) for i, item in enumerate(items) if merged.get(i, item) is not None
        ]  # type: ignore[misc]


def read_content(
    name: str, source: str, *, keep_extras: bool = False, skip_ids: Mapping[str, str] | None = None
) -> ContentDocument:
    """Blocks, anchors and left-out elements of the XHTML ``source`` (file ``name`` in the ZIP).

    ``skip_ids`` maps element ids to a reason for leaving them out (landmarks that point into
    the file)."""
    document = ContentDocument(name)
    parser = _ContentParser(document, keep_extras, skip_ids or {})
    parser.feed(source)
    parser.close()
    _join_verse(parser)
    return document
