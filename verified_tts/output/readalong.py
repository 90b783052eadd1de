"""Read-along outputs of a render: the timing map, captions and an EPUB 3 with Media Overlays.

:func:`deliver_read_along` is part of the deliver step, so whatever assembles a chapter (a
render, a rerender, a lexicon edit, a review decision) brings its read-along files with it.
Per assembled chapter (:func:`deliver_chapter`): its timing map (``readalong/NN-title.json``,
:mod:`verified_tts.output.timings`), its captions (``captions/NN-title.srt``/``.vtt``,
:mod:`verified_tts.output.captions`) and, for ``epub3``, its audio as the EPUB carries it
(AAC in MP4 or MP3: the EPUB 3 core media types). Then, from every chapter's map (a chapter not
assembled now keeps the map it has on disk), ``timings.json`` and ``book.epub``: the book's
own XHTML with a span around every sentence (and word, with ``--read-along words``) when it was
an EPUB (:mod:`verified_tts.output.readalong_xhtml`), XHTML made from the segments otherwise,
one Media Overlay document per content document (an EPUB content document has one overlay; a
chapter that spans two documents has its sentences in both), and the package
(:mod:`verified_tts.output.epub_package`). A sentence's clip runs from its first sample to the
next sentence's first (the last to its own end), so reading systems play the pauses too; the
clip starts are the assembly offsets, rounded to the millisecond.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError
from verified_tts.options import ProductionOptions
from verified_tts.options.output import EPUB_AUDIO, READ_ALONG_LEVELS
from verified_tts.output.assembly import AssembledFile
from verified_tts.output.captions import CAPTION_FORMATS, write_captions
from verified_tts.output.encode import BookTags, write_aac, write_mp3
from verified_tts.output.epub_package import (
    NewDocument,
    Overlay,
    PackageContent,
    write_package,
)
from verified_tts.output.readalong_smil import (
    Entry,
    sentence_entries,
    sentence_mark,
    smil_document,
)
from verified_tts.output.readalong_xhtml import (
    GeneratedSentence,
    Mark,
    Piece,
    generated_document,
    mark_document,
    upgrade_doctype,
)
from verified_tts.output.timings import (
    READALONG_DIR,
    ChapterTimings,
    WordCache,
    chapter_timings,
    chapter_words,
    read_chapter_timings,
    write_book_timings,
    write_chapter_timings,
)
from verified_tts.output.word_timing import WordAligner
from verified_tts.text.book import Book

__all__ = [
    "EPUB_AUDIO",
    "READ_ALONG_FORMATS",
    "READ_ALONG_LEVELS",
    "ReadAlongInput",
    "deliver_chapter",
    "deliver_read_along",
]

READ_ALONG_FORMATS = ("epub3", *CAPTION_FORMATS)
_EPUB_BITRATE = 64_000  # speech in mono: the EPUB's audio is for listening, not ACX


@dataclass(frozen=True)
class ReadAlongInput:
    """What the read-along files need besides the assembled chapters: the book that was read
    (its segments know where they stand in an EPUB's XHTML), the EPUB it came from (None:
    Markdown or plain text), and how to get a word aligner (None: exact word timings only)."""

    book: Book
    source: Path | None = None
    aligner: Callable[[], WordAligner] | None = None
    aligner_identity: Mapping[str, Any] = field(default_factory=dict)  # keys the words cache


def _audio_path(stem: str, epub_audio: str) -> str:
    return f"{READALONG_DIR}/audio/{stem}.{EPUB_AUDIO[epub_audio][0]}"


def deliver_chapter(
    out_dir: Path, timings: ChapterTimings, options: ProductionOptions
) -> dict[str, Any]:
    """One chapter's read-along files: timing map, captions, and the EPUB's audio."""
    record: dict[str, Any] = {
        "index": timings.index,
        "timings": write_chapter_timings(out_dir, timings),
        "captions": write_captions(out_dir, timings, options.formats),
    }
    if "epub3" in options.formats:
        relative = _audio_path(timings.stem, options.epub_audio)
        source = out_dir / timings.audio
        if options.epub_audio == "mp3":
            write_mp3(out_dir / relative, source, BookTags(), title=timings.title,
                      bitrate=_EPUB_BITRATE)  # fmt: skip
        else:
            write_aac(out_dir / relative, source, bitrate=_EPUB_BITRATE)
        record["audio"] = relative
    return record


def deliver_read_along(
    files: Sequence[AssembledFile],
    out_dir: Path,
    options: ProductionOptions,
    tags: BookTags,
    read: ReadAlongInput,
) -> dict[str, Any]:
    """Every read-along output of the render; see the module docstring."""
    words_wanted = options.read_along == "words"
    chapters = [f for f in files if f.index is not None and f.flac]
    assembled = [f for f in chapters if f.clips]
    cache = None
    aligner = read.aligner if words_wanted else None
    if aligner is not None:
        made = aligner  # load the model once, only when some winner needs aligning
        loaded: list[WordAligner] = []

        def aligner() -> WordAligner:
            if not loaded:
                loaded.append(made())
            return loaded[0]

        cache = WordCache(out_dir / READALONG_DIR / "words.json", read.aligner_identity)
    words = chapter_words(assembled, aligner, cache)
    if cache is not None:
        cache.save()
    records = []
    timings: list[ChapterTimings] = []
    for file in chapters:
        if file.clips:
            chapter = chapter_timings(file, words.get(int(file.index or 0)))
            records.append(deliver_chapter(out_dir, chapter, options))
        else:  # not assembled in this run: the map it already has
            chapter = read_chapter_timings(out_dir, Path(str(file.flac)).stem)
            if chapter is None:
                raise UserError(
                    f"{file.flac} has no read-along timings in {out_dir / READALONG_DIR}: "
                    "render the chapter again"
                )
        timings.append(chapter)
    result: dict[str, Any] = {
        "level": options.read_along,
        "timings": write_book_timings(out_dir, timings, words=words_wanted),
        "chapters": records,
    }
    counted = [w for c in timings for s in c.sentences for w in s.words]
    result["words"] = {
        source: sum(w.source == source for w in counted)
        for source in ("generator", "asr", "interpolated")
    }
    if "epub3" in options.formats:
        result["epub"] = _write_epub(out_dir, timings, options, tags, read)
    return result


# --- the EPUB ---------------------------------------------------------------------------------


def _package_path(archive: zipfile.ZipFile) -> str:
    container = archive.read("META-INF/container.xml").decode("utf-8", errors="replace")
    match = re.search(r"full-path\s*=\s*[\"']([^\"']+)[\"']", container)
    if match is None:
        raise UserError("the EPUB's META-INF/container.xml names no package document")
    return match.group(1)


def _write_epub(
    out_dir: Path,
    timings: Sequence[ChapterTimings],
    options: ProductionOptions,
    tags: BookTags,
    read: ReadAlongInput,
) -> dict[str, Any]:
    words = options.read_along == "words"
    entries = sentence_entries(timings, read.book)
    source = read.source if read.source is not None and read.source.is_file() else None
    opf_path, epub2, originals = None, False, {}
    if source is not None:
        with zipfile.ZipFile(source) as archive:
            opf_path = _package_path(archive)
            opf = archive.read(opf_path).decode("utf-8", errors="replace")
            epub2 = not re.search(r"<(?:\w+:)?package\b[^>]*\bversion\s*=\s*[\"']3", opf)
            for name in {e.segment.source.file for e in entries if e.segment and e.segment.source}:
                try:
                    originals[name] = archive.read(name).decode("utf-8")
                except (KeyError, UnicodeDecodeError):
                    continue  # not UTF-8 as the reader read it: its sentences stay unmarked
    base = posixpath.dirname(opf_path) if opf_path else "EPUB"
    extra = f"{base}/readalong" if source is not None else base
    extra = extra.lstrip("/")
    stylesheet = f"{extra}/readalong.css"
    audio = {c.index: f"{extra}/audio/{posixpath.basename(_audio_path(c.stem, options.epub_audio))}"
             for c in timings}  # fmt: skip
    by_document: dict[str, list[Entry]] = {}
    marks: dict[str, list[Mark]] = {}
    generated: dict[int, list[Entry]] = {}
    unmarked = 0
    unread = _chapters_without_source(read.book)  # the credits: no document of the EPUB has them
    for entry in entries:
        mark = sentence_mark(entry, words) if source is not None else None
        name = entry.segment.source.file if mark and entry.segment and entry.segment.source else ""
        if mark is not None and name in originals:
            by_document.setdefault(name, []).append(entry)
            marks.setdefault(name, []).append(mark)
        elif source is None or entry.chapter.index in unread:
            generated.setdefault(entry.chapter.index, []).append(entry)
        else:
            unmarked += 1
    marked, pieces = {}, {}
    for name, document_marks in marks.items():
        text = upgrade_doctype(originals[name]) if epub2 else originals[name]
        href = posixpath.relpath(stylesheet, posixpath.dirname(name))
        marked[name], made = mark_document(text, document_marks, stylesheet=href)
        pieces[name] = made
    new_documents = []
    first_book_chapter = min((e.chapter.index for e in entries if e.sentence.id and e.segment
                              and e.segment.source), default=None)  # fmt: skip
    for index, chapter_entries in generated.items():
        chapter = chapter_entries[0].chapter
        path = f"{extra}/text/{chapter.stem}.xhtml"
        sentences = [
            GeneratedSentence(
                e.sentence.id,
                e.sentence.text,
                e.sentence.paragraph or 0,
                bool(e.segment and e.segment.kind == "heading"),
                tuple(f"{e.sentence.id}-w{k + 1}" for k in range(len(e.sentence.text.split())))
                if words
                else (),
            )  # fmt: skip
            for e in chapter_entries
        ]
        text, made = generated_document(
            chapter.title, sentences, language=read.book.language or "en",
            stylesheet=posixpath.relpath(stylesheet, posixpath.dirname(path)),
        )  # fmt: skip
        before = first_book_chapter is not None and index < first_book_chapter
        new_documents.append(NewDocument(path, text, chapter.title, before))
        by_document[path], pieces[path] = chapter_entries, made
    overlays = []
    order = [*marks, *(d.path for d in new_documents)]
    for number, document in enumerate(order, 1):
        stem = posixpath.splitext(posixpath.basename(document))[0]
        smil_path = f"{extra}/smil/{number:03d}-{stem}.smil"
        text, duration = smil_document(smil_path, document, by_document[document], pieces[document],
                               audio, words)  # fmt: skip
        overlays.append(Overlay(document, smil_path, text, duration))
    media = EPUB_AUDIO[options.epub_audio][1]
    content = PackageContent(
        base=extra,
        overlays=tuple(overlays),
        marked=marked,
        generated=tuple(new_documents),
        audio=tuple(
            (audio[c.index], out_dir / _audio_path(c.stem, options.epub_audio), media)
            for c in timings
        ),
        stylesheet=stylesheet,
        title=tags.title or read.book.title or "Untitled",
        language=read.book.language or "en",
        author=tags.author,
        cover=tags.cover,
    )
    nav = _navsentence_entries(timings, by_document, pieces)
    write_package(out_dir / "book.epub", content, source=source, opf_path=opf_path, epub2=epub2,
                  nav_entries=nav)  # fmt: skip
    return {
        "path": "book.epub",
        "overlays": len(overlays),
        "sentences": sum(len(v) for v in by_document.values()),
        "unmarked": unmarked,
        "duration_s": round(sum(o.duration_ms for o in overlays) / 1000, 3),
    }


def _chapters_without_source(book: Book) -> set[int]:
    """Chapters no segment of which was read from a file (the opening and closing credits)."""
    return {c.index for c in book.chapters if all(s.source is None for s in c.segments)}


def _navsentence_entries(
    timings: Sequence[ChapterTimings],
    by_document: dict[str, list[Entry]],
    pieces: dict[str, dict[str, list[Piece]]],
) -> list[tuple[str, str]]:
    """(title, document#first sentence) per chapter, for a navigation document we make."""
    where = {e.sentence.id: document for document, es in by_document.items() for e in es}
    out = []
    for chapter in timings:
        first = next((s for s in chapter.sentences if s.id in where), None)
        if first is None:
            continue
        document = where[first.id]
        made = pieces[document].get(first.id)
        fragment = f"#{made[0].id}" if made else ""
        out.append((chapter.title or f"Chapter {chapter.index + 1}", f"{document}{fragment}"))
    return out
