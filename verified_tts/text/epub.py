"""EPUB in: the spine's documents, cut into chapters by the table of contents, as a :class:`Book`.

An EPUB is a ZIP: ``META-INF/container.xml`` names the package document (OPF), whose spine gives
the reading order and whose manifest maps ids to files. Chapter titles and boundaries come from
the EPUB 3 navigation document (``<nav epub:type="toc">``) or, for EPUB 2, the NCX; a chapter may
start at an anchor inside a file. Each spine document is read with the standard library's
``html.parser`` (lenient with the broken XHTML real books contain; the OPF, NCX and container are
XML and read with ``xml.etree``), keeping headings, paragraphs, list items and quotes, and
dropping what a listener does not want: footnotes and endnotes with their reference marks, page
numbers, images, tables, navigation, and front-matter boilerplate (cover, title page, table of
contents, copyright); ``keep_extras`` keeps notes and front matter. What was dropped is listed in
:attr:`EpubBook.skipped`. The result goes through the same sentence, normalisation and pause code
as Markdown (:func:`verified_tts.text.book.book_from_document`). EbookLib is AGPL-3.0, so it is not
used. DRM-protected, broken or empty books are one :class:`UserError` line.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from dataclasses import dataclass, replace
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag
from xml.etree import ElementTree

from verified_tts.errors import UserError
from verified_tts.text.book import Book, book_from_document
from verified_tts.text.markdown_book import Block, BlockKind, Document, Section

__all__ = ["EpubBook", "TocEntry", "load_epub"]

_NS = {
    "c": "urn:oasis:names:tc:opendocument:xmlns:container",
    "opf": "http://www.idpf.org/2007/opf",
    "dc": "http://purl.org/dc/elements/1.1/",
    "ncx": "http://www.daisy.org/z3986/2005/ncx/",
}
# Encryption algorithms that only obfuscate embedded fonts: the text is readable.
_FONT_OBFUSCATION = {
    "http://www.idpf.org/2008/embedding",
    "http://ns.adobe.com/pdf/enc#RC",
}
_BLOCK_TAGS = {
    "p", "div", "li", "blockquote", "dd", "dt", "section", "article", "header", "footer",
    "main", "body", "pre", "address", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "ul", "ol",
}  # fmt: skip
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
# Subtrees that are never read: markup, media, tables and navigation.
_SKIP_TAGS = {"head", "script", "style", "svg", "math", "table", "nav", "figure", "img", "rt",
              "rp", "audio", "video", "object", "iframe", "template", "button"}  # fmt: skip
_VOID = {"img", "br", "hr", "meta", "link", "input", "wbr", "col", "area", "base", "source"}
# epub:type / role values of what a listener does not want read
_NOTE_TYPES = {"footnote", "footnotes", "endnote", "endnotes", "rearnote", "rearnotes", "note",
               "doc-footnote", "doc-endnote", "doc-endnotes", "doc-footnotes", "doc-noteref",
               "noteref", "pagebreak", "doc-pagebreak", "annoref", "doc-backlink",
               "backlink"}  # fmt: skip
_FRONT_TYPES = {"cover", "titlepage", "halftitlepage", "title-page", "toc", "doc-toc",
                "copyright-page", "copyright", "colophon", "imprint", "landmarks", "loi", "lot",
                "index", "doc-index", "frontispiece", "seriespage", "other-credits",
                "imprimatur", "errata", "doc-cover", "doc-colophon"}  # fmt: skip
_FRONT_TITLES = re.compile(
    r"^\s*(cover|title ?page|half ?title|(table of )?contents|copyright( page)?|colophon|"
    r"imprint|also by .*|index|list of (illustrations|figures|tables))\s*$",
    re.IGNORECASE,
)
_NOTE_TITLES = re.compile(r"^\s*(end ?notes|foot ?notes|notes)\s*$", re.IGNORECASE)
_NOTE_MARK = re.compile(r"^\s*[\[(]?(\d{1,3}|[*†‡§¶]+|[ivxlc]{1,5})[\])]?\s*$", re.IGNORECASE)
_DIALOGUE_OPENERS = ('"', "“", "”", "'", "‘", "«", "»", "„", "—", "―", "--")


@dataclass(frozen=True)
class TocEntry:
    """A table-of-contents entry: title, spine file and optional anchor inside it."""

    title: str
    href: str  # path inside the ZIP
    fragment: str | None


@dataclass(frozen=True)
class EpubBook:
    """The parsed book plus what the reader left out, for the manifest."""

    book: Book
    toc: tuple[TocEntry, ...]
    skipped: tuple[str, ...]  # "file: reason" for each spine document or note left out


# --- container -------------------------------------------------------------------------------


def _xml(archive: zipfile.ZipFile, name: str, path: Path) -> ElementTree.Element:
    try:
        data = archive.read(name)
    except KeyError:
        raise UserError(f"{path} is a broken EPUB: it has no {name}") from None
    try:
        return ElementTree.fromstring(data)
    except ElementTree.ParseError as error:
        raise UserError(
            f"{path} is a broken EPUB: {name} is not well-formed XML ({error})"
        ) from None


def _check_drm(archive: zipfile.ZipFile, path: Path) -> None:
    names = set(archive.namelist())
    if "META-INF/rights.xml" in names:
        raise UserError(
            f"{path} is DRM-protected (META-INF/rights.xml): verified-tts reads DRM-free EPUBs "
            "only; use a DRM-free copy of the book"
        )
    if "META-INF/encryption.xml" in names:
        root = _xml(archive, "META-INF/encryption.xml", path)
        methods = {
            element.get("Algorithm", "")
            for element in root.iter()
            if element.tag.endswith("EncryptionMethod")
        }
        if methods - _FONT_OBFUSCATION:
            raise UserError(
                f"{path} is DRM-protected (its content is encrypted, META-INF/encryption.xml): "
                "verified-tts reads DRM-free EPUBs only; use a DRM-free copy of the book"
            )


def _text(element: ElementTree.Element | None) -> str | None:
    if element is None:
        return None
    text = " ".join("".join(element.itertext()).split())
    return text or None


@dataclass(frozen=True)
class _Package:
    folder: str
    title: str | None
    author: str | None
    language: str | None
    cover: str | None  # path of the cover image inside the ZIP
    manifest: dict[str, tuple[str, str, str]]  # id -> (path, media type, properties)
    spine: tuple[tuple[str, bool], ...]  # (path, linear)
    nav: str | None
    ncx: str | None
    front: frozenset[str]  # paths the guide or landmarks call front matter


def _package(archive: zipfile.ZipFile, path: Path) -> _Package:
    container = _xml(archive, "META-INF/container.xml", path)
    rootfile = container.find(".//c:rootfile", _NS)
    if rootfile is None or not rootfile.get("full-path"):
        raise UserError(f"{path} is a broken EPUB: META-INF/container.xml names no package file")
    opf_path = unquote(rootfile.get("full-path", ""))
    opf = _xml(archive, opf_path, path)
    folder = posixpath.dirname(opf_path)

    def resolve(href: str) -> str:
        return posixpath.normpath(posixpath.join(folder, unquote(href)))

    manifest = {
        item.get("id", ""): (
            resolve(item.get("href", "")),
            item.get("media-type", ""),
            item.get("properties", ""),
        )
        for item in opf.findall("opf:manifest/opf:item", _NS)
    }
    spine_element = opf.find("opf:spine", _NS)
    if spine_element is None:
        raise UserError(f"{path} is a broken EPUB: {opf_path} has no spine (reading order)")
    spine = tuple(
        (manifest[ref.get("idref", "")][0], ref.get("linear", "yes") != "no")
        for ref in spine_element.findall("opf:itemref", _NS)
        if ref.get("idref") in manifest
    )
    nav = next((p for p, _, props in manifest.values() if "nav" in props.split()), None)
    toc_id = spine_element.get("toc")
    ncx = manifest[toc_id][0] if toc_id in manifest else None
    if ncx is None:
        ncx = next((p for p, media, _ in manifest.values() if media.endswith("dtbncx+xml")), None)
    cover = next((p for p, _, props in manifest.values() if "cover-image" in props.split()), None)
    if cover is None:  # EPUB 2: <meta name="cover" content="ITEM-ID"/>
        for meta in opf.findall("opf:metadata/opf:meta", _NS):
            if meta.get("name") == "cover" and meta.get("content") in manifest:
                cover = manifest[meta.get("content", "")][0]
    front = {
        resolve(urldefrag(ref.get("href", ""))[0])
        for ref in opf.findall("opf:guide/opf:reference", _NS)
        if ref.get("type", "").lower() in {"cover", "title-page", "toc", "copyright-page"}
    }
    creators = opf.findall("opf:metadata/dc:creator", _NS)
    authors = [c for c in creators if c.get(f"{{{_NS['opf']}}}role", "aut") == "aut"] or creators
    return _Package(
        folder=folder,
        title=_text(opf.find("opf:metadata/dc:title", _NS)),
        author=_text(authors[0]) if authors else None,
        language=_text(opf.find("opf:metadata/dc:language", _NS)),
        cover=cover,
        manifest=manifest,
        spine=spine,
        nav=nav,
        ncx=ncx,
        front=frozenset(front),
    )


# --- table of contents -----------------------------------------------------------------------


class _NavParser(HTMLParser):
    """Top-level entries of ``<nav epub:type="toc">`` and the landmarks' front-matter links."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.nav: str | None = None  # "toc" | "landmarks" | None
        self.depth = 0  # <ol> depth inside the toc nav
        self.entries: list[tuple[int, str, str]] = []  # (depth, title, href)
        self.landmarks: list[tuple[str, str]] = []  # (type, href)
        self.link: tuple[str, str] | None = None  # (href, epub:type)
        self.title = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "nav":
            kinds = set(values.get("epub:type", "").split()) | set(values.get("role", "").split())
            self.nav = (
                "toc"
                if kinds & {"toc", "doc-toc"}
                else ("landmarks" if "landmarks" in kinds else None)
            )
        elif tag == "ol" and self.nav == "toc":
            self.depth += 1
        elif tag == "a" and self.nav:
            self.link, self.title = (values.get("href", ""), values.get("epub:type", "")), ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "nav":
            self.nav = None
        elif tag == "ol" and self.nav == "toc":
            self.depth -= 1
        elif tag == "a" and self.link is not None:
            href, kind = self.link
            if self.nav == "toc":
                self.entries.append((self.depth, " ".join(self.title.split()), href))
            elif self.nav == "landmarks":
                self.landmarks.append((kind, href))
            self.link = None

    def handle_data(self, data: str) -> None:
        if self.link is not None:
            self.title += data


def _chapter_level(depths: list[int]) -> int:
    """The TOC level that holds chapters: the top, unless the top is one wrapper entry."""
    top = min(depths)
    return top + 1 if depths.count(top) == 1 and len(depths) > 1 else top


def _toc(
    archive: zipfile.ZipFile, package: _Package, path: Path
) -> tuple[list[TocEntry], set[str]]:
    """Chapter entries (in TOC order) and files the landmarks call front matter."""
    raw: list[tuple[int, str, str, str]] = []  # (depth, title, href, base folder)
    front: set[str] = set()
    if package.nav and package.nav in archive.namelist():
        parser = _NavParser()
        parser.feed(archive.read(package.nav).decode("utf-8", errors="replace"))
        base = posixpath.dirname(package.nav)
        raw = [(depth, title, href, base) for depth, title, href in parser.entries]
        for kind, href in parser.landmarks:
            if set(kind.split()) & _FRONT_TYPES:
                front.add(posixpath.normpath(posixpath.join(base, unquote(urldefrag(href)[0]))))
    if not raw and package.ncx and package.ncx in archive.namelist():
        root = _xml(archive, package.ncx, path)
        base = posixpath.dirname(package.ncx)

        def walk(point_parent: ElementTree.Element, depth: int) -> None:
            for point in point_parent.findall("ncx:navPoint", _NS):
                content = point.find("ncx:content", _NS)
                title = _text(point.find("ncx:navLabel/ncx:text", _NS)) or ""
                if content is not None:
                    raw.append((depth, title, content.get("src", ""), base))
                walk(point, depth + 1)

        nav_map = root.find("ncx:navMap", _NS)
        if nav_map is not None:
            walk(nav_map, 1)
    if not raw:
        return [], front
    level = _chapter_level([depth for depth, *_ in raw])
    entries = []
    for depth, title, href, base in raw:
        if depth != level:
            continue
        file, fragment = urldefrag(href)
        entries.append(
            TocEntry(
                title=title,
                href=posixpath.normpath(posixpath.join(base, unquote(file))),
                fragment=unquote(fragment) or None,
            )
        )
    return entries, front


# --- content documents -----------------------------------------------------------------------


@dataclass
class _Item:
    """A readable block or an anchor, in document order."""

    anchor: str | None = None
    kind: BlockKind = "paragraph"
    text: str = ""
    line: int = 1


class _ContentParser(HTMLParser):
    """Blocks of one XHTML document, with the ids met on the way (chapter anchors)."""

    def __init__(self, keep_notes: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.keep_notes = keep_notes
        self.items: list[_Item] = []
        self.stack: list[tuple[str, bool]] = []  # (tag, skipping this subtree)
        self.buffer: list[str] = []
        self.buffer_line = 1
        self.heading = False
        self.kinds: set[str] = set()  # epub:type values of the body/sections seen
        self.dropped = 0  # notes, page numbers and note marks left out

    @property
    def skipping(self) -> bool:
        return bool(self.stack) and self.stack[-1][1]

    def flush(self) -> None:
        text = " ".join("".join(self.buffer).split())
        self.buffer = []
        if text:
            kind: BlockKind = (
                "heading"
                if self.heading
                else ("dialogue" if text.startswith(_DIALOGUE_OPENERS) else "paragraph")
            )
            self.items.append(_Item(kind=kind, text=text, line=self.buffer_line))

    def _skip(self, tag: str, values: dict[str, str]) -> bool:
        if tag in _SKIP_TAGS or "hidden" in values or values.get("aria-hidden") == "true":
            return True
        kinds = set(values.get("epub:type", "").split()) | set(values.get("role", "").split())
        if tag in ("body", "section", "div", "article"):
            self.kinds |= kinds
        if not self.keep_notes and kinds & _NOTE_TYPES:
            self.dropped += 1
            return True
        return not self.keep_notes and tag == "aside"

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        skip = self.skipping or self._skip(tag, values)
        if not self.skipping and values.get("id"):
            if tag in _BLOCK_TAGS:
                self.flush()
            self.items.append(_Item(anchor=values["id"]))
        if tag in _BLOCK_TAGS and not self.skipping:
            self.flush()
            self.buffer_line = self.getpos()[0]
            self.heading = tag in _HEADINGS
        if tag == "br" and not skip:
            self.buffer.append(" ")
        if tag == "a" and not skip and not self.keep_notes and "#" in values.get("href", ""):
            # A short numeric or symbol link to an anchor is a note reference (EPUB 2 books
            # rarely mark them): decided when its text is known.
            self.stack.append((tag, False))
            self.buffer.append("\0")
            return
        if tag not in _VOID:
            self.stack.append((tag, skip))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if not self.skipping and values.get("id"):
            self.items.append(_Item(anchor=values["id"]))
        if tag == "br" and not self.skipping:
            self.buffer.append(" ")
        elif tag in ("hr", "p", "div") and not self.skipping:
            self.flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        # Close up to the matching open tag (broken XHTML leaves some open).
        for position in range(len(self.stack) - 1, -1, -1):
            if self.stack[position][0] == tag:
                was_skipping = self.stack[position][1]
                del self.stack[position:]
                break
        else:
            return
        if tag == "a" and not was_skipping and "\0" in self.buffer:
            start = len(self.buffer) - 1 - self.buffer[::-1].index("\0")
            link_text = "".join(self.buffer[start + 1 :])
            if _NOTE_MARK.match(link_text):
                self.dropped += 1
                del self.buffer[start:]
            else:
                del self.buffer[start]
        if tag in _BLOCK_TAGS and not self.skipping:
            self.flush()
            self.heading = False

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            if not "".join(self.buffer).strip():
                self.buffer_line = self.getpos()[0]
            self.buffer.append(data)

    def close(self) -> None:
        super().close()
        self.flush()


def _document(archive: zipfile.ZipFile, name: str, keep_notes: bool) -> _ContentParser:
    parser = _ContentParser(keep_notes)
    parser.feed(archive.read(name).decode("utf-8", errors="replace"))
    parser.close()
    return parser


# --- the book --------------------------------------------------------------------------------


def _open(path: Path) -> zipfile.ZipFile:
    if not path.is_file():
        raise UserError(f"{path} does not exist: pass an existing .epub file")
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise UserError(f"{path} is not a readable EPUB (not a ZIP archive: {error})") from None
    return archive


def load_epub(path: str | Path, *, max_chars: int = 250, keep_extras: bool = False) -> EpubBook:
    """Read an EPUB 2 or 3 into chapters of spoken segments; see the module docstring."""
    path = Path(path)
    with _open(path) as archive:
        _check_drm(archive, path)
        package = _package(archive, path)
        entries, landmark_front = _toc(archive, package, path)
        names = set(archive.namelist())
        spine = [(name, linear) for name, linear in package.spine if name in names]
        if not spine:
            raise UserError(f"{path} is a broken EPUB: none of its spine documents is in the ZIP")
        front = package.front | landmark_front
        titled = {e.href: e.title for e in entries}
        first_entry = min(
            (i for i, (name, _) in enumerate(spine) if name in titled), default=len(spine)
        )
        skipped: list[str] = []
        stream: list[tuple[str, _Item]] = []
        kept: list[TocEntry] = []
        for position, (name, linear) in enumerate(spine):
            parser = _document(archive, name, keep_extras)
            reason = None
            if not keep_extras:
                if parser.kinds & _FRONT_TYPES or name in front:
                    reason = "front matter (cover, title page, contents or copyright)"
                elif _FRONT_TITLES.match(titled.get(name, "")):
                    reason = f"front matter ({titled[name]})"
                elif parser.kinds & _NOTE_TYPES or _NOTE_TITLES.match(titled.get(name, "")):
                    reason = "notes"
                elif not linear:
                    reason = "not in the linear reading order (linear=no)"
                elif entries and position < first_entry and name not in titled:
                    reason = "before the first chapter of the table of contents"
            if parser.dropped and reason is None:
                skipped.append(f"{name}: {parser.dropped} notes, note marks or page numbers")
            if reason:
                skipped.append(f"{name}: {reason}")
                continue  # its TOC entries find no place and start no chapter
            stream.append((name, _Item(anchor="")))  # the document's own start
            stream.extend((name, item) for item in parser.items)
            if not entries:  # no table of contents: each document is a chapter
                headings = [
                    i.text for i in parser.items if i.anchor is None and i.kind == "heading"
                ]
                kept.append(TocEntry(headings[0] if headings else "", name, None))
        cover = archive.read(package.cover) if package.cover in names else None
    entries = entries or kept
    sections = _sections(stream, entries)
    document = Document(package.title, tuple(sections))
    book = book_from_document(document, max_chars=max_chars)
    if not book.chapters:
        raise UserError(
            f"{path} has no readable text: every spine document is images, notes or front matter "
            "(--keep-extras reads front matter and notes)"
        )
    book = replace(book, author=package.author, language=package.language, cover=cover)
    return EpubBook(book, tuple(entries), tuple(skipped))


def _sections(stream: list[tuple[str, _Item]], entries: list[TocEntry]) -> list[Section]:
    """Cut the reading-order stream at each TOC entry's position; titles from the TOC."""
    where: dict[tuple[str, str], int] = {}
    for position, (name, item) in enumerate(stream):
        if item.anchor is not None:
            where.setdefault((name, item.anchor), position)
    starts: dict[int, str] = {}
    for entry in entries:
        position = where.get((entry.href, entry.fragment or ""))
        if position is None and entry.fragment:
            position = where.get((entry.href, ""))  # a dangling anchor: the file's start
        if position is not None:
            starts.setdefault(position, entry.title)
    sections: list[Section] = []
    title: str | None = None
    blocks: list[Block] = []
    for position, (_, item) in enumerate(stream):
        if position in starts:
            if blocks:
                sections.append(Section(title, blocks[0].line, tuple(blocks)))
            title, blocks = starts[position] or None, []
        if item.anchor is None:
            blocks.append(Block(kind=item.kind, text=item.text, line=item.line))
    if blocks:
        sections.append(Section(title, blocks[0].line, tuple(blocks)))
    return sections
