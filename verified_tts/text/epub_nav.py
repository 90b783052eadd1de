"""An EPUB's table of contents as a tree, and the level of it that cuts the book into chapters.

The EPUB 3 navigation document (``<nav epub:type="toc">``, nested ``<ol>``) or, for EPUB 2, the
NCX (nested ``navPoint``) gives entries in reading order, each at its depth (1 = top level).
Entries without a link (a ``<span>`` label over a group, as anthologies group stories by
author) start nothing; their children keep their own depth. A chapter cut at depth *d* starts at
every linked entry of depth *d* or less. :func:`choose_depth` picks *d* when the producer does
not: the shallowest level at which no one entry holds most of the book (Standard Ebooks nest
every chapter under the half-title page; the IDPF's "Children's Literature" nests its stories
under one section and an author label). The landmarks navigation says which files are front
matter.
"""

from __future__ import annotations

import posixpath
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import unquote, urldefrag
from xml.etree import ElementTree

__all__ = ["Navigation", "TocEntry", "choose_depth", "read_navigation"]

_NCX = "{http://www.daisy.org/z3986/2005/ncx/}"
# ACX takes no file over 120 minutes; at an audiobook's 150 words a minute that is this many
# words. A chapter longer than that is cut again at the TOC's next level inside it.
LONG_CHAPTER_WORDS = 18_000


@dataclass(frozen=True)
class TocEntry:
    """A table-of-contents entry: title, spine file, optional anchor inside it, and depth."""

    title: str
    href: str  # path inside the ZIP
    fragment: str | None
    depth: int = 1


@dataclass(frozen=True)
class Navigation:
    """All linked TOC entries in order, and the (file, anchor) pairs landmarks call front matter."""

    entries: tuple[TocEntry, ...]
    front: frozenset[tuple[str, str | None]]

    @property
    def depths(self) -> tuple[int, ...]:
        return tuple(sorted({entry.depth for entry in self.entries}))


def _resolve(base: str, href: str) -> tuple[str, str | None]:
    file, fragment = urldefrag(href)
    return posixpath.normpath(posixpath.join(base, unquote(file))), unquote(fragment) or None


class _NavParser(HTMLParser):
    """Entries of ``<nav epub:type="toc">`` with their ``<ol>`` depth, and the landmarks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.nav: str | None = None  # "toc" | "landmarks" | None
        self.depth = 0  # <ol> depth inside the toc nav
        self.entries: list[tuple[int, str, str]] = []  # (depth, title, href)
        self.landmarks: list[tuple[str, str]] = []  # (epub:type, href)
        self.link: tuple[str, str] | None = None  # (href, epub:type) of the open <a>
        self.title: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "nav":
            kinds = set(values.get("epub:type", "").split()) | set(values.get("role", "").split())
            self.nav = "toc" if kinds & {"toc", "doc-toc"} else None
            self.nav = self.nav or ("landmarks" if "landmarks" in kinds else None)
        elif tag == "ol" and self.nav == "toc":
            self.depth += 1
        elif tag == "a" and self.nav:
            self.link, self.title = (values.get("href", ""), values.get("epub:type", "")), []
        elif tag == "img" and self.link is not None:
            self.title.append(values.get("alt", ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "nav":
            self.nav = None
        elif tag == "ol" and self.nav == "toc":
            self.depth -= 1
        elif tag == "a" and self.link is not None:
            href, kind = self.link
            if self.nav == "toc" and href:
                title = " ".join("".join(self.title).split())
                self.entries.append((max(self.depth, 1), title, href))
            elif self.nav == "landmarks":
                self.landmarks.append((kind, href))
            self.link = None

    def handle_data(self, data: str) -> None:
        if self.link is not None:
            self.title.append(data)


def _ncx_entries(root: ElementTree.Element, base: str) -> list[TocEntry]:
    entries: list[TocEntry] = []

    def walk(parent: ElementTree.Element, depth: int) -> None:
        for point in parent.findall(f"{_NCX}navPoint"):
            content = point.find(f"{_NCX}content")
            label = point.find(f"{_NCX}navLabel/{_NCX}text")
            title = " ".join("".join(label.itertext()).split()) if label is not None else ""
            if content is not None and content.get("src"):
                file, fragment = _resolve(base, content.get("src", ""))
                entries.append(TocEntry(title, file, fragment, depth))
            walk(point, depth + 1)

    nav_map = root.find(f"{_NCX}navMap")
    if nav_map is not None:
        walk(nav_map, 1)
    return entries


def read_navigation(
    archive: zipfile.ZipFile,
    nav: str | None,
    ncx: str | None,
    front_types: frozenset[str],
) -> Navigation:
    """The TOC of the EPUB 3 nav document, else of the NCX; a broken NCX gives no entries."""
    names = set(archive.namelist())
    entries: list[TocEntry] = []
    front: set[tuple[str, str | None]] = set()
    if nav and nav in names:
        parser = _NavParser()
        parser.feed(archive.read(nav).decode("utf-8", errors="replace"))
        parser.close()
        base = posixpath.dirname(nav)
        for depth, title, href in parser.entries:
            file, fragment = _resolve(base, href)
            entries.append(TocEntry(title, file, fragment, depth))
        for kind, href in parser.landmarks:
            if set(kind.split()) & front_types:
                front.add(_resolve(base, href))
    if not entries and ncx and ncx in names:
        try:
            root = ElementTree.fromstring(archive.read(ncx))
        except ElementTree.ParseError:
            root = None
        if root is not None:
            entries = _ncx_entries(root, posixpath.dirname(ncx))
    # The top level starts at depth 1 even where a nav wraps its list in an extra <ol>.
    shift = min((e.depth for e in entries), default=1) - 1
    entries = [TocEntry(e.title, e.href, e.fragment, e.depth - shift) for e in entries]
    return Navigation(tuple(entries), frozenset(front))


def choose_depth(words_by_depth: Sequence[tuple[int, Sequence[int]]]) -> int:
    """The depth to cut chapters at, from each depth's chapter word counts (shallowest first):
    the shallowest at which no chapter holds more than two thirds of the book's words. One
    entry that holds more is a wrapper (a half-title page, a single section over the stories),
    not a chapter; where every level has one, the deepest."""
    if not words_by_depth:
        return 1
    total = max(sum(words) for _, words in words_by_depth) or 1
    for depth, words in words_by_depth:
        if words and max(words) * 3 <= total * 2:
            return depth
    return words_by_depth[-1][0]
