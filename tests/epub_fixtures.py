"""Builds real EPUB 2 and EPUB 3 files for the tests (ZIP, container, OPF, NCX or nav, XHTML)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from pathlib import Path

from PIL import Image

CONTAINER = """<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>
  </rootfiles></container>"""


def xhtml(body: str, title: str = "t", body_type: str = "", head: str = "") -> str:
    kind = f' epub:type="{body_type}"' if body_type else ""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html>\n'
        '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" '
        'xmlns:ssml="http://www.w3.org/2001/10/synthesis">\n'
        f"<head><title>{title}</title>{head}</head>\n<body{kind}>\n{body}\n</body></html>\n"
    )


def nav_list(entries: Sequence[tuple]) -> str:
    """Nested ``<ol>`` of (title, href or None, children[, "hidden"]) entries; None: a label."""
    items = []
    for title, href, children, *hidden in entries:
        label = f'<a href="{href}">{title}</a>' if href else f"<span>{title}</span>"
        inner = nav_list(children) if children else ""
        if inner and hidden:
            inner = inner.replace("<ol>", '<ol hidden="hidden">', 1)
        items.append(f"<li>{label}{inner}</li>")
    return f"<ol>{''.join(items)}</ol>"


def toc_nav(entries: Sequence[tuple], landmarks: Sequence[tuple[str, str]] = ()) -> str:
    """A navigation document's body: the nested TOC and optional landmarks (type, href)."""
    marks = "".join(
        f'<li><a epub:type="{kind}" href="{href}">{kind}</a></li>' for kind, href in landmarks
    )
    landmarks_nav = f'<nav epub:type="landmarks"><ol>{marks}</ol></nav>' if landmarks else ""
    return f'<nav epub:type="toc"><h1>Contents</h1>{nav_list(entries)}</nav>{landmarks_nav}'


def pls(entries: Sequence[tuple[str, str]], language: str = "en") -> bytes:
    """A W3C PLS lexicon of (grapheme, IPA) entries."""
    lexemes = "".join(
        f"<lexeme><grapheme>{grapheme}</grapheme><phoneme>{ipa}</phoneme></lexeme>"
        for grapheme, ipa in entries
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<lexicon version="1.0" alphabet="ipa" '
        f'xml:lang="{language}" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon">'
        f"{lexemes}</lexicon>"
    ).encode()


def cover_jpeg() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (60, 90), (30, 60, 120)).save(buffer, "JPEG")
    return buffer.getvalue()


def build_epub(
    path: Path,
    documents: Sequence[tuple[str, str]],
    toc: Sequence[tuple[str, str]],
    *,
    version: int = 3,
    spine: Sequence[str] | None = None,
    title: str = "A Test Book",
    author: str = "Ann Author",
    language: str = "en",
    cover: bytes | None = None,
    linear_no: Sequence[str] = (),
    extra_files: dict[str, bytes] | None = None,
    guide: Sequence[tuple[str, str]] = (),
    nav: str | None = None,
    resources: Sequence[tuple[str, str, bytes]] = (),
) -> Path:
    """``documents``: (file name, XHTML) in manifest order; ``spine``: reading order (file
    names, default the manifest order); ``toc``: (title, href with optional #anchor); ``nav``:
    the EPUB 3 navigation document's body instead (nested lists, landmarks); ``resources``:
    (file name, media type, bytes) in the manifest but not the spine (a PLS lexicon)."""
    spine = list(spine or [name for name, _ in documents])
    ids = {name: f"doc{i}" for i, (name, _) in enumerate(documents)}
    items = [
        f'<item id="{ids[name]}" href="{name}" media-type="application/xhtml+xml"/>'
        for name, _ in documents
    ]
    if version == 3:
        nav_items = "".join(f'<li><a href="{href}">{label}</a></li>' for label, href in toc)
        nav = xhtml(nav or f'<nav epub:type="toc"><h1>Contents</h1><ol>{nav_items}</ol></nav>')
        items.append('<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" '
                     'properties="nav"/>')  # fmt: skip
    else:
        points = "".join(
            f'<navPoint id="p{i}" playOrder="{i + 1}"><navLabel><text>{label}</text></navLabel>'
            f'<content src="{href}"/></navPoint>'
            for i, (label, href) in enumerate(toc)
        )
        ncx = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">'
            f"<head/><docTitle><text>{title}</text></docTitle><navMap>{points}</navMap></ncx>"
        )
        items.append('<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>')
    for number, (name, media, _) in enumerate(resources):
        items.append(f'<item id="res{number}" href="{name}" media-type="{media}"/>')
    cover_meta = ""
    if cover is not None:
        properties = ' properties="cover-image"' if version == 3 else ""
        items.append(f'<item id="cover-img" href="cover.jpg" media-type="image/jpeg"{properties}/>')
        cover_meta = '<meta name="cover" content="cover-img"/>' if version == 2 else ""
    no = ' linear="no"'
    itemrefs = "".join(
        f'<itemref idref="{ids[name]}"{no if name in linear_no else ""}/>' for name in spine
    )
    toc_attribute = ' toc="ncx"' if version == 2 else ""
    guide_xml = ""
    if guide:
        refs = "".join(f'<reference type="{kind}" href="{href}"/>' for kind, href in guide)
        guide_xml = f"<guide>{refs}</guide>"
    opf = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<package xmlns="http://www.idpf.org/2007/opf" version="{version}.0" '
        'unique-identifier="id">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/" '
        'xmlns:opf="http://www.idpf.org/2007/opf">'
        f'<dc:identifier id="id">urn:test</dc:identifier><dc:title>{title}</dc:title>'
        f"<dc:creator>{author}</dc:creator><dc:language>{language}</dc:language>{cover_meta}"
        f"</metadata><manifest>{''.join(items)}</manifest>"
        f"<spine{toc_attribute}>{itemrefs}</spine>{guide_xml}</package>"
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr("META-INF/container.xml", CONTAINER)
        archive.writestr("OEBPS/content.opf", opf)
        if version == 3:
            archive.writestr("OEBPS/nav.xhtml", nav)
        else:
            archive.writestr("OEBPS/toc.ncx", ncx)
        if cover is not None:
            archive.writestr("OEBPS/cover.jpg", cover)
        for name, content in documents:
            archive.writestr(f"OEBPS/{name}", content)
        for name, _, data in resources:
            archive.writestr(f"OEBPS/{name}", data)
        for name, data in (extra_files or {}).items():
            archive.writestr(name, data)
    return path


def novel(path: Path, version: int = 3, **kwargs) -> Path:
    """A small book: cover and copyright pages, two chapters in one file (the second starts at
    an anchor), a third file, endnotes; the manifest order differs from the spine."""
    documents = [
        (
            "notes.xhtml",
            xhtml(
                '<section epub:type="endnotes"><ol><li id="n1">A note that must '
                "not be read.</li></ol></section>"
            ),
        ),  # fmt: skip
        ("ch3.xhtml", xhtml("<h1>Chapter Three</h1><p>The third chapter has one sentence.</p>")),
        ("cover.xhtml", xhtml('<img src="cover.jpg" alt="Cover image"/>', body_type="cover")),
        ("copyright.xhtml", xhtml("<p>Copyright 2024 by Ann Author. All rights reserved.</p>")),
        (
            "ch12.xhtml",
            xhtml(
                "<h1>Chapter One</h1>"
                "<p>It was the year 1984 when it began."
                '<a epub:type="noteref" href="notes.xhtml#n1">1</a> The wolf ran.</p>'
                '<span epub:type="pagebreak" id="page7" title="7">7</span>'
                '<p>"Stop," said the lamb.<a href="notes.xhtml#n1"><sup>2</sup></a></p>'
                '<figure><img src="x.png" alt="a map"/><figcaption>Figure 1. A map.</figcaption>'
                "</figure>"
                '<h1 id="two">Chapter Two</h1><p>The second chapter starts inside the file.</p>'
            ),
        ),
    ]
    spine = ["cover.xhtml", "copyright.xhtml", "ch12.xhtml", "ch3.xhtml", "notes.xhtml"]
    toc = [
        ("Copyright", "copyright.xhtml"),
        ("Chapter One", "ch12.xhtml"),
        ("Chapter Two", "ch12.xhtml#two"),
        ("Chapter Three", "ch3.xhtml"),
        ("Notes", "notes.xhtml"),
    ]
    return build_epub(path, documents, toc, version=version, spine=spine, **kwargs)
