"""EPUB in: the spine's documents, cut into chapters by the table of contents, as a :class:`Book`.

An EPUB is a ZIP: ``META-INF/container.xml`` names the package document (OPF), whose spine gives
the reading order and whose manifest maps ids to files (the OPF, NCX and container are XML, read
with ``xml.etree``). Each spine document is read element by element
(:mod:`verified_tts.text.epub_content`): notes, front-matter boilerplate, reference lists, page
numbers, tables and figures are left out where they stand, so a book in one XHTML file reads its
body, and ``keep_extras`` reads notes and front matter. Whole documents are left out when the
spine marks them ``linear="no"`` or the guide or landmarks call them front matter. The table of
contents (:mod:`verified_tts.text.epub_nav`) cuts the stream into chapters at the depth the
producer chooses, or at the level that splits the book into chapter-sized parts
(:mod:`verified_tts.text.epub_chapters`). A book's own pronunciations, PLS lexicons linked from
its XHTML and inline ``ssml:ph`` (:mod:`verified_tts.text.epub_pls`), come back as lexicon
entries and block phonemes; a malformed one is a warning. What was left out, element by element
and why, is :attr:`EpubBook.skipped`. The result goes through the same sentence, normalisation
and pause code as Markdown (:func:`verified_tts.text.book.book_from_document`). EbookLib is
AGPL-3.0, so it is not used. DRM-protected, broken or empty books are one :class:`UserError`
line.
"""

from __future__ import annotations

import posixpath
import sys
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import unquote, urldefrag
from xml.etree import ElementTree

from verified_tts.errors import UserError
from verified_tts.text.book import Book, book_from_document
from verified_tts.text.epub_chapters import StreamItem, cut_chapters
from verified_tts.text.epub_content import (
    FRONT_TYPES,
    Anchor,
    ContentDocument,
    TextBlock,
    read_content,
)
from verified_tts.text.epub_nav import TocEntry, read_navigation
from verified_tts.text.epub_pls import read_pls, to_espeak_ipa
from verified_tts.text.lexicon import LexiconEntry
from verified_tts.text.markdown_book import Block, Document, Section

__all__ = ["EpubBook", "TocEntry", "load_epub"]

_NS = {
    "c": "urn:oasis:names:tc:opendocument:xmlns:container",
    "opf": "http://www.idpf.org/2007/opf",
    "dc": "http://purl.org/dc/elements/1.1/",
}
# Encryption algorithms that only obfuscate embedded fonts: the text is readable.
_FONT_OBFUSCATION = {
    "http://www.idpf.org/2008/embedding",
    "http://ns.adobe.com/pdf/enc#RC",
}
_GUIDE_FRONT = {"cover", "title-page", "toc", "copyright-page"}
_LISTED_PER_KIND = 12  # elements of one kind in a document listed one by one, then counted


@dataclass(frozen=True)
class EpubBook:
    """The parsed book plus what the reader left out and the book's own pronunciations."""

    book: Book
    toc: tuple[TocEntry, ...]  # the entries the chapters start at, titled as the chapters are
    skipped: tuple[str, ...]  # "file[#id]: why (element, N words)", element by element
    toc_depth: int | None = None  # the TOC depth chapters were cut at (None: the book has no TOC)
    toc_depths: tuple[int, ...] = ()  # the depths the TOC has
    lexicon: tuple[LexiconEntry, ...] = ()  # entries of the PLS lexicons the XHTML links
    warnings: tuple[str, ...] = field(default=())  # malformed PLS, unknown IPA symbols


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
    front: frozenset[tuple[str, str | None]]  # (file, anchor) the guide calls front matter


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
    front = set()
    for ref in opf.findall("opf:guide/opf:reference", _NS):
        if ref.get("type", "").lower() in _GUIDE_FRONT:
            file, fragment = urldefrag(ref.get("href", ""))
            front.add((resolve(file), unquote(fragment) or None))
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


# --- the book --------------------------------------------------------------------------------


def _open(path: Path) -> zipfile.ZipFile:
    if not path.is_file():
        raise UserError(f"{path} does not exist: pass an existing .epub file")
    try:
        # OCF names every file in UTF-8; zip tools that do not set the ZIP's UTF-8 flag would
        # otherwise have non-ASCII names read as code page 437.
        utf8 = {"metadata_encoding": "utf-8"} if sys.version_info >= (3, 11) else {}
        archive = zipfile.ZipFile(path, **utf8)  # type: ignore[arg-type]
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path} is not a readable EPUB (not a ZIP archive: {error})") from None
    return archive


def _open(path: Path) -> zipfile.ZipFile:
    if not path.is_file():
        raise UserError(f"{path} does not exist: pass an existing .epub file")
    try:
        # OCF names every file in UTF-8; zip tools that do not set the ZIP's UTF-8 flag would
        # otherwise have non-ASCII names read as code page 437.
        utf8 = {"metadata_encoding": "utf-8"} if sys.version_info >= (3, 11) else {}
        archive = zipfile.ZipFile(path, **utf8)  # type: ignore[arg-type]
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path} is not a readable EPUB (not a ZIP archive: {error})") from None
    return archive


def _left_out(document: ContentDocument) -> list[str]:
    """One line per element left out, and one per kind where a document leaves out many (a
    textbook's hundreds of equations); then the counts of small marks."""
    kinds: dict[tuple[str, str], list[int]] = {}
    for _, why, tag, words in document.skipped:
        kinds.setdefault((why, tag), []).append(words)
    lines = []
    for anchor, why, tag, words in document.skipped:
        if len(kinds[why, tag]) <= _LISTED_PER_KIND:
            where = f"{document.name}#{anchor}" if anchor else document.name
            lines.append(f"{where}: {why} ({tag}, {words} words)")
    for (why, tag), counts in kinds.items():
        if len(counts) > _LISTED_PER_KIND:
            lines.append(
                f"{document.name}: {why} ({len(counts)} {tag} elements, {sum(counts)} words)"
            )
    if document.marks:
        counts = ", ".join(f"{count} {what}" for what, count in sorted(document.marks.items()))
        lines.append(f"{document.name}: {counts}")
    return lines


def _spoken_phonemes(
    document: ContentDocument, language: str | None, warnings: list[str]
) -> list[Anchor | TextBlock]:
    """The document's items with each ``ssml:ph`` in espeak-ng IPA; the unusable ones dropped."""
    items: list[Anchor | TextBlock] = []
    for item in document.items:
        if isinstance(item, TextBlock) and item.phonemes:
            kept = []
            for written, given, alphabet in item.phonemes:
                ipa, why = to_espeak_ipa(given, alphabet, language)
                if ipa is None:
                    warnings.append(f"{document.name}: ssml:ph on '{written}': {why}; left out")
                    continue
                kept.append((written, ipa, "ipa"))
            item = replace(item, phonemes=tuple(kept))
        items.append(item)
    return items


def _book_lexicon(
    archive: zipfile.ZipFile, links: Mapping[str, None], language: str | None
) -> tuple[tuple[LexiconEntry, ...], list[str]]:
    entries: list[LexiconEntry] = []
    warnings: list[str] = []
    names = set(archive.namelist())
    seen: set[str] = set()
    for name in links:
        if name not in names:
            warnings.append(f"{name}: the pronunciation lexicon the XHTML links is not in the EPUB")
            continue
        lexicon = read_pls(archive.read(name), name, language)
        warnings += lexicon.warnings
        for entry in lexicon.entries:
            if entry.pattern.casefold() not in seen:
                seen.add(entry.pattern.casefold())
                entries.append(entry)
    return tuple(entries), warnings


def load_epub(
    path: str | Path,
    *,
    max_chars: int = 250,
    keep_extras: bool = False,
    toc_depth: int | None = None,
    dialogue: bool = False,
    threshold: float | None = None,
) -> EpubBook:
    """Read an EPUB 2 or 3 into chapters of spoken segments; see the module docstring.

    ``toc_depth`` cuts chapters at that depth of the table of contents (1 = its top level);
    None chooses the level that splits the book into chapter-sized parts. ``dialogue`` reads
    quoted speech apart from the narration (:func:`~verified_tts.text.book.book_from_document`),
    leaving a speaker guess below ``threshold`` to the dialogue voice."""
    path = Path(path)
    with _open(path) as archive:
        _check_drm(archive, path)
        package = _package(archive, path)
        navigation = read_navigation(archive, package.nav, package.ncx, frozenset(FRONT_TYPES))
        names = set(archive.namelist())
        spine = [(name, linear) for name, linear in package.spine if name in names]
        if not spine:
            raise UserError(f"{path} is a broken EPUB: none of its spine documents is in the ZIP")
        front = package.front | navigation.front
        whole_front = {file for file, fragment in front if fragment is None}
        skipped: list[str] = []
        warnings: list[str] = []
        stream: list[StreamItem] = []
        titles: dict[str, str] = {}
        links: dict[str, None] = {}
        documents: list[str] = []
        for name, linear in spine:
            reason = None
            if not keep_extras and name in whole_front:
                reason = "front matter (the guide or landmarks say so)"
            elif not keep_extras and not linear:
                reason = "not in the linear reading order (linear=no)"
            skip_ids = {
                fragment: "front matter (the guide or landmarks say so)"
                for file, fragment in front
                if file == name and fragment and not keep_extras
            }
            source = archive.read(name).decode("utf-8", errors="replace")
            document = read_content(name, source, keep_extras=keep_extras, skip_ids=skip_ids)
            base = posixpath.dirname(name)
            for href in document.lexicons:
                links[posixpath.normpath(posixpath.join(base, unquote(urldefrag(href)[0])))] = None
            reason = reason or document.whole
            if reason:
                words = document.whole_words or sum(
                    len(i.text.split()) for i in document.items if isinstance(i, TextBlock)
                )
                skipped.append(f"{name}: {reason} (whole document, {words} words)")
                continue  # its TOC entries find no place and start no chapter
            skipped += _left_out(document)
            if document.title:
                titles[name] = document.title
            documents.append(name)
            stream.append(StreamItem(name, Anchor("")))  # the document's own start
            items = _spoken_phonemes(document, package.language, warnings)
            stream.extend(StreamItem(name, item) for item in items)
        lexicon, lexicon_warnings = _book_lexicon(archive, links, package.language)
        cover = archive.read(package.cover) if package.cover in names else None
    cut = None
    if navigation.entries:
        cut = cut_chapters(
            stream, navigation.entries, keep_extras=keep_extras, toc_depth=toc_depth, titles=titles
        )
    if cut is not None and cut.placed:
        sections, used, depth, depths = cut.sections, cut.entries, cut.depth, cut.depths
        skipped += cut.skipped
    else:  # no table of contents, or none that points into the text: a chapter a document
        sections, used = _by_document(stream, documents)
        depth, depths = None, ()
    book = book_from_document(
        Document(package.title, tuple(sections)),
        max_chars=max_chars,
        dialogue=dialogue,
        threshold=threshold,
    )
    if not book.chapters:
        raise UserError(
            f"{path} has no readable text: every spine document is images, notes or front matter "
            "(--keep-extras reads front matter and notes)"
        )
    book = replace(book, author=package.author, language=package.language, cover=cover)
    return EpubBook(
        book,
        tuple(used),
        tuple(skipped),
        depth,
        depths,
        lexicon,
        tuple(warnings + lexicon_warnings),
    )


def _by_document(
    stream: list[StreamItem], documents: list[str]
) -> tuple[list[Section], tuple[TocEntry, ...]]:
    """A chapter per document, titled by its first heading (None without one)."""
    sections: list[Section] = []
    entries: list[TocEntry] = []
    for name in documents:
        blocks = [u.item for u in stream if u.file == name and isinstance(u.item, TextBlock)]
        if not blocks:
            continue
        headings = [b.text for b in blocks if b.kind == "heading"]
        section_blocks = tuple(
            Block(
                b.kind,
                b.text,
                b.line,
                b.line_starts,
                phonemes=tuple((w, i) for w, i, _ in b.phonemes),
                source=b.source,
            )
            for b in blocks
        )
        sections.append(Section(headings[0] if headings else None, blocks[0].line, section_blocks))
        entries.append(TocEntry(headings[0] if headings else "", name, None))
    return sections, tuple(entries)
