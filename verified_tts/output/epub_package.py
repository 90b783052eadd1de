"""The read-along EPUB's container: the package document and the ZIP, from a book or from nothing.

:func:`write_package` writes an EPUB 3 (``mimetype`` first and stored, as OCF asks) holding the
content documents, their Media Overlay documents, the chapter audio and the active-class style
sheet that :mod:`verified_tts.output.readalong` made. From an EPUB the book's own files are
copied as they are, except the content documents that gained spans, and its package document is
edited as text, so metadata, manifest and spine keep everything they had: the new items are
added, each overlaid document's item gets its ``media-overlay``, ``media:duration`` (per overlay
and in total), ``media:active-class`` and ``dcterms:modified`` are set, and an EPUB 2 package
becomes version 3.0 (the EPUB 3 attributes it lacks added, the ``opf:`` attributes EPUB 3 does
not allow dropped, a navigation document added; the NCX stays). Without an EPUB (Markdown or
plain text) the package, navigation and content documents are all made here.
"""

from __future__ import annotations

import datetime
import html
import posixpath
import re
import uuid
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from verified_tts.storage.atomic import atomic_path

__all__ = ["NewDocument", "Overlay", "PackageContent", "clock", "write_package"]

_OPF = "http://www.idpf.org/2007/opf"
ACTIVE_CLASS = "-epub-media-overlay-active"
STYLESHEET = f""".{ACTIVE_CLASS} {{ background-color: #fde68a; color: inherit; }}
"""


def clock(milliseconds: int) -> str:
    """A SMIL full clock value, h:mm:ss.fff."""
    hours, rest = divmod(int(milliseconds), 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{hours}:{minutes:02d}:{rest // 1000:02d}.{rest % 1000:03d}"


@dataclass(frozen=True)
class Overlay:
    """A content document (its path in the ZIP) and its Media Overlay document."""

    document: str
    smil: str  # path in the ZIP
    smil_text: str
    duration_ms: int


@dataclass(frozen=True)
class NewDocument:
    """A content document made here (a generated chapter, the credits, a navigation document)."""

    path: str
    text: str
    title: str | None = None
    before_book: bool = False  # opening credits go before the book's own documents


@dataclass(frozen=True)
class PackageContent:
    """Everything the EPUB gets beyond (or instead of) the book's own files."""

    base: str  # the folder new files go in (the book's package folder, or "EPUB")
    overlays: tuple[Overlay, ...]
    marked: dict[str, str]  # the book's documents with spans: path -> text
    generated: tuple[NewDocument, ...]  # in reading order
    audio: tuple[tuple[str, Path, str], ...]  # (path in the ZIP, file here, media type)
    stylesheet: str  # path in the ZIP
    title: str
    language: str
    author: str | None = None
    cover: bytes | None = None


def _ids(paths: Sequence[str], prefix: str, taken: set[str]) -> dict[str, str]:
    ids = {}
    for number, path in enumerate(paths, 1):
        name = f"{prefix}{number}"
        while name in taken:
            name = f"x{name}"
        ids[path] = name
        taken.add(name)
    return ids


def _href(path: str, opf_folder: str) -> str:
    return posixpath.relpath(path, opf_folder or ".")


def _media_type(path: str) -> str:
    return "application/xhtml+xml" if path.endswith(".xhtml") else "text/css"


def _metadata_tail(content: PackageContent, smil_ids: dict[str, str]) -> str:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    total = sum(o.duration_ms for o in content.overlays)
    lines = [f'<meta property="dcterms:modified">{now}</meta>']
    for overlay in content.overlays:
        refines = smil_ids[overlay.smil]
        duration = clock(overlay.duration_ms)
        lines.append(f'<meta property="media:duration" refines="#{refines}">{duration}</meta>')
    lines.append(f'<meta property="media:duration">{clock(total)}</meta>')
    lines.append(f'<meta property="media:active-class">{ACTIVE_CLASS}</meta>')
    return "\n    ".join(lines)


def _items(
    content: PackageContent, opf_folder: str, taken: set[str], nav: NewDocument | None
) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """Manifest lines of the new files; the ids of SMIL files and of generated documents."""
    smil_ids = _ids([o.smil for o in content.overlays], "ra-smil-", taken)
    doc_ids = _ids([d.path for d in content.generated], "ra-text-", taken)
    audio_ids = _ids([a for a, _, _ in content.audio], "ra-audio-", taken)
    overlay_of = {o.document: smil_ids[o.smil] for o in content.overlays}
    lines = []
    for o in content.overlays:
        lines.append(f'<item id="{smil_ids[o.smil]}" href="{_href(o.smil, opf_folder)}" '
                     'media-type="application/smil+xml"/>')  # fmt: skip
    for d in content.generated:
        overlay = f' media-overlay="{overlay_of[d.path]}"' if d.path in overlay_of else ""
        lines.append(f'<item id="{doc_ids[d.path]}" href="{_href(d.path, opf_folder)}" '
                     f'media-type="application/xhtml+xml"{overlay}/>')  # fmt: skip
    for path, _, media in content.audio:
        lines.append(f'<item id="{audio_ids[path]}" href="{_href(path, opf_folder)}" '
                     f'media-type="{media}"/>')  # fmt: skip
    (css_id,) = _ids([content.stylesheet], "ra-css-", taken).values()
    lines.append(f'<item id="{css_id}" href="{_href(content.stylesheet, opf_folder)}" '
                 'media-type="text/css"/>')  # fmt: skip
    if nav is not None:
        (nav_id,) = _ids([nav.path], "ra-nav-", taken).values()
        lines.append(f'<item id="{nav_id}" href="{_href(nav.path, opf_folder)}" '
                     'media-type="application/xhtml+xml" properties="nav"/>')  # fmt: skip
    return lines, smil_ids, doc_ids


def _write_zip(path: Path, files: Sequence[tuple[str, bytes | Path]]) -> None:
    with atomic_path(path) as temporary, zipfile.ZipFile(temporary, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        for name, data in files:
            if isinstance(data, Path):  # audio: compressed already
                archive.write(data, name, compress_type=zipfile.ZIP_STORED)
            else:
                archive.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED)


def _common_files(content: PackageContent) -> list[tuple[str, bytes | Path]]:
    files: list[tuple[str, bytes | Path]] = [(content.stylesheet, STYLESHEET.encode())]
    files += [(o.smil, o.smil_text.encode("utf-8")) for o in content.overlays]
    files += [(d.path, d.text.encode("utf-8")) for d in content.generated]
    files += [(zip_path, local) for zip_path, local, _ in content.audio]
    return files


_CONTAINER = """<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="{opf}" media-type="application/oebps-package+xml"/></rootfiles>
</container>
"""


def nav_document(entries: Sequence[tuple[str, str]], language: str, at: str) -> str:
    """A navigation document at ``at`` listing (title, path#fragment) entries."""
    esc = html.escape
    items = "".join(
        f'<li><a href="{esc(posixpath.relpath(href.split("#")[0], posixpath.dirname(at)))}'
        f'{"#" + esc(href.split("#", 1)[1]) if "#" in href else ""}">{esc(title)}</a></li>'
        for title, href in entries
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html>\n'
        '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" '
        f'lang="{esc(language)}" xml:lang="{esc(language)}">\n<head><meta charset="utf-8"/>'
        "<title>Contents</title></head>\n<body>"
        f'<nav epub:type="toc" id="toc"><h1>Contents</h1><ol>{items}</ol></nav></body>\n</html>\n'
    )


def _generated_package(
    path: Path, content: PackageContent, nav_entries: Sequence[tuple[str, str]]
) -> None:
    base = content.base
    nav = NewDocument(f"{base}/nav.xhtml", nav_document(nav_entries, content.language,
                                                        f"{base}/nav.xhtml"))  # fmt: skip
    taken: set[str] = set()
    lines, smil_ids, doc_ids = _items(content, base, taken, nav)
    cover_files: list[tuple[str, bytes | Path]] = []
    if content.cover and content.cover[:3] == b"\xff\xd8\xff":
        lines.append('<item id="ra-cover" href="cover.jpg" media-type="image/jpeg" '
                     'properties="cover-image"/>')  # fmt: skip
        cover_files.append((f"{base}/cover.jpg", content.cover))
    spine = "".join(f'<itemref idref="{doc_ids[d.path]}"/>' for d in content.generated)
    esc = html.escape
    identifier = uuid.uuid5(uuid.NAMESPACE_URL, f"verified-tts:{content.title}")
    creator = f"<dc:creator>{esc(content.author)}</dc:creator>" if content.author else ""
    manifest_lines = "\n    ".join(lines)
    opf = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<package xmlns="{_OPF}" version="3.0" unique-identifier="book-id" xml:lang="'
        f'{esc(content.language)}">\n  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">\n'
        f'    <dc:identifier id="book-id">urn:uuid:{identifier}</dc:identifier>\n'
        f"    <dc:title>{esc(content.title)}</dc:title>\n"
        f"    <dc:language>{esc(content.language)}</dc:language>\n    {creator}\n"
        f"    {_metadata_tail(content, smil_ids)}\n  </metadata>\n"
        f"  <manifest>\n    {manifest_lines}\n  </manifest>\n"
        f"  <spine>{spine}</spine>\n</package>\n"
    )
    opf_path = f"{base}/content.opf"
    files: list[tuple[str, bytes | Path]] = [
        ("META-INF/container.xml", _CONTAINER.format(opf=opf_path).encode()),
        (opf_path, opf.encode("utf-8")),
        (nav.path, nav.text.encode("utf-8")),
        *cover_files,
        *_common_files(content),
    ]
    _write_zip(path, files)


_END = r"</(?:\w+:)?{}\s*>"


def _insert_before_end(opf: str, element: str, text: str) -> str:
    match = re.search(_END.format(element), opf)
    if match is None:
        raise ValueError(f"the package document has no </{element}>")
    return opf[: match.start()] + text + opf[match.start() :]


def _edited_opf(opf: str, opf_folder: str, content: PackageContent, nav: NewDocument | None) -> str:
    taken = set(re.findall(r"\bid\s*=\s*[\"']([^\"']+)[\"']", opf))
    lines, smil_ids, doc_ids = _items(content, opf_folder, taken, nav)
    opf = re.sub(r"<meta\s[^>]*property\s*=\s*[\"'](?:dcterms:modified|media:[\w-]+)[\"']"
                 r"[^>]*>.*?</meta>\s*", "", opf, flags=re.DOTALL)  # fmt: skip
    opf = re.sub(r"(<(?:\w+:)?package\b[^>]*\bversion\s*=\s*)[\"'][^\"']*[\"']", r'\g<1>"3.0"',
                 opf, count=1)  # fmt: skip
    if nav is not None:  # EPUB 2: EPUB 3 has no opf:role, opf:file-as, opf:scheme, opf:event
        opf = re.sub(r"\s(?:opf:)(?:role|file-as|scheme|event)\s*=\s*(?:\"[^\"]*\"|'[^']*')",
                     "", opf)  # fmt: skip
    overlay_of = {o.document: smil_ids[o.smil] for o in content.overlays}

    def add_overlay(match: re.Match[str]) -> str:
        tag = match.group(0)
        href = re.search(r"\bhref\s*=\s*[\"']([^\"']+)[\"']", tag)
        if href is None:
            return tag
        from urllib.parse import unquote

        target = posixpath.normpath(posixpath.join(opf_folder, unquote(href.group(1))))
        if target not in overlay_of:
            return tag
        tag = re.sub(r"\smedia-overlay\s*=\s*(?:\"[^\"]*\"|'[^']*')", "", tag)
        return re.sub(r"\s*/?>$", f' media-overlay="{overlay_of[target]}"/>', tag)

    opf = re.sub(r"<(?:\w+:)?item\b[^>]*>", add_overlay, opf)
    opf = _insert_before_end(opf, "metadata", "  " + _metadata_tail(content, smil_ids) + "\n  ")
    opf = _insert_before_end(opf, "manifest", "  " + "\n    ".join(lines) + "\n  ")
    before = "".join(f'<itemref idref="{doc_ids[d.path]}"/>' for d in content.generated
                     if d.before_book)  # fmt: skip
    after = "".join(f'<itemref idref="{doc_ids[d.path]}"/>' for d in content.generated
                    if not d.before_book)  # fmt: skip
    if before:
        opf = re.sub(r"(<(?:\w+:)?spine\b[^>]*>)", lambda m: m.group(1) + before, opf, count=1)
    if after:
        opf = _insert_before_end(opf, "spine", after)
    return opf


def write_package(
    path: Path,
    content: PackageContent,
    *,
    source: Path | None = None,
    opf_path: str | None = None,
    epub2: bool = False,
    nav_entries: Sequence[tuple[str, str]] = (),
) -> None:
    """Write ``book.epub`` at ``path``: from the EPUB ``source`` (its package document at
    ``opf_path``), or made whole when ``source`` is None."""
    if source is None:
        _generated_package(path, content, nav_entries)
        return
    assert opf_path is not None
    opf_folder = posixpath.dirname(opf_path)
    nav = None
    if epub2:
        nav_path = f"{content.base}/nav.xhtml"
        nav = NewDocument(nav_path, nav_document(nav_entries, content.language, nav_path))
    added = {name for name, _ in _common_files(content)} | ({nav.path} if nav else set())
    files: list[tuple[str, bytes | Path]] = []
    with zipfile.ZipFile(source) as book:
        for info in book.infolist():
            name = info.filename
            if name == "mimetype" or name in added or info.is_dir():
                continue
            if name == opf_path:
                text = book.read(name).decode("utf-8")
                files.append((name, _edited_opf(text, opf_folder, content, nav).encode("utf-8")))
            elif name in content.marked:
                files.append((name, content.marked[name].encode("utf-8")))
            else:
                files.append((name, book.read(name)))
    if nav is not None:
        files.append((nav.path, nav.text.encode("utf-8")))
    _write_zip(path, files + _common_files(content))
