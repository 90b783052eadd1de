"""The reading-order stream of an EPUB's blocks cut into titled chapters at its TOC entries.

Each TOC entry is placed where its anchor stands in the stream (a file's start when the entry
names no anchor, or one the file lacks); an entry pointing into left-out matter starts nothing.
What the contents list as front matter or notes by title ("Copyright", "Contents", "Notes") is
left out up to the next entry of its level in the same file, and so is everything before the
first entry. The chapters are cut at every entry of the chosen depth or shallower
(:func:`~verified_tts.text.epub_nav.choose_depth` when the producer gives none); a chapter of
headings alone (a part's title page) joins the chapter after it. Each chapter is titled: its TOC
entry, else its first heading, else its document's ``<title>``, else "Chapter N".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from verified_tts.text.epub_content import Anchor, TextBlock
from verified_tts.text.epub_nav import LONG_CHAPTER_WORDS, TocEntry, choose_depth
from verified_tts.text.markdown_book import Block, Section

__all__ = ["ChapterCut", "StreamItem", "cut_chapters"]

_FRONT_TITLES = re.compile(
    r"^\s*(cover|title ?page|half ?title|(table of )?contents|copyright( page)?|colophon|"
    r"imprint|also by .*|index|list of (illustrations|figures|tables))\s*$",
    re.IGNORECASE,
)
_NOTE_TITLES = re.compile(r"^\s*(end ?notes|foot ?notes|notes)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class StreamItem:
    file: str
    item: Anchor | TextBlock


@dataclass(frozen=True)
class ChapterCut:
    sections: tuple[Section, ...]
    entries: tuple[TocEntry, ...]  # the entries that start the chapters, titles as read
    depth: int
    depths: tuple[int, ...]  # the depths the TOC has
    skipped: tuple[str, ...]
    placed: bool = True  # False: no entry points into the text read


def _words(item: Anchor | TextBlock) -> int:
    return len(item.text.split()) if isinstance(item, TextBlock) else 0


def _place(stream: Sequence[StreamItem], entries: Sequence[TocEntry]) -> list[int | None]:
    """Each entry's position in the stream, or None where it starts nothing."""
    where: dict[tuple[str, str], tuple[int, bool]] = {}
    for position, unit in enumerate(stream):
        if isinstance(unit.item, Anchor):
            where.setdefault((unit.file, unit.item.id), (position, unit.item.live))
    positions: list[int | None] = []
    for entry in entries:
        found = where.get((entry.href, entry.fragment or ""))
        if found is None and entry.fragment:
            found = where.get((entry.href, ""))  # a dangling anchor: the file's start
        positions.append(found[0] if found and found[1] else None)
    return positions


def _drops(
    stream: Sequence[StreamItem],
    entries: Sequence[TocEntry],
    positions: list[int | None],
    keep_extras: bool,
) -> tuple[list[bool], list[str]]:
    """Which stream positions are left out (listed as front matter, or before the contents)."""
    dropped = [False] * len(stream)
    skipped: list[str] = []
    placed = [p for p in positions if p is not None]
    if not placed:
        return dropped, skipped
    first = min(placed)
    before: dict[str, int] = {}
    for position in range(first):
        dropped[position] = True
        before[stream[position].file] = before.get(stream[position].file, 0) + _words(
            stream[position].item
        )
    skipped += [
        f"{file}: before the first entry of the contents ({words} words)"
        for file, words in before.items()
        if words
    ]
    if keep_extras:
        return dropped, skipped
    for index, (entry, start) in enumerate(zip(entries, positions, strict=True)):
        titled = _FRONT_TITLES.match(entry.title) or _NOTE_TITLES.match(entry.title)
        if start is None or not titled:
            continue
        later = [
            p
            for other, p in zip(entries[index + 1 :], positions[index + 1 :], strict=True)
            if p is not None and p > start and other.depth <= entry.depth
        ]
        end = start + 1
        limit = min(later, default=len(stream))
        while end < min(limit, len(stream)) and stream[end].file == entry.href:
            end += 1
        words = sum(_words(stream[p].item) for p in range(start, end) if not dropped[p])
        for p in range(start, end):
            dropped[p] = True
        if words:
            kind = "notes" if _NOTE_TITLES.match(entry.title) else "front matter"
            where = f"{entry.href}#{entry.fragment}" if entry.fragment else entry.href
            skipped.append(
                f"{where}: {kind}: {entry.title} (as the contents call it, {words} words)"
            )
    return dropped, skipped


def _cut(
    stream: Sequence[StreamItem],
    dropped: Sequence[bool],
    starts: dict[int, TocEntry],
) -> list[tuple[TocEntry | None, list[int]]]:
    """(entry, stream positions of its text blocks) per chapter; heading-only chapters join the
    next one."""
    chapters: list[tuple[TocEntry | None, list[int]]] = []
    for position, unit in enumerate(stream):
        if position in starts:
            chapters.append((starts[position], []))
        if not dropped[position] and isinstance(unit.item, TextBlock):
            if not chapters:
                chapters.append((None, []))
            chapters[-1][1].append(position)
    chapters = [(entry, blocks) for entry, blocks in chapters if blocks]
    joined: list[tuple[TocEntry | None, list[int]]] = []
    carry: list[int] = []
    for number, (entry, blocks) in enumerate(chapters):
        headings_only = all(stream[p].item.kind == "heading" for p in blocks)  # type: ignore[union-attr]
        if headings_only and number < len(chapters) - 1:
            carry += blocks
            continue
        joined.append((entry, carry + blocks))
        carry = []
    return joined


def _total(stream: Sequence[StreamItem], blocks: Sequence[int]) -> int:
    return sum(_words(stream[p].item) for p in blocks)


def _split_long(
    stream: Sequence[StreamItem],
    dropped: Sequence[bool],
    starts: dict[int, TocEntry],
    entries: Sequence[TocEntry],
    positions: Sequence[int | None],
    depth: int,
    depths: Sequence[int],
) -> dict[int, TocEntry]:
    """``starts`` with each chapter longer than an ACX file may be cut again at the TOC's
    next level inside it, level after level, while one is still too long."""
    starts = dict(starts)
    for deeper in (d for d in depths if d > depth):
        bounds = sorted(starts) + [len(stream)]
        long = [
            (first, last)
            for first, last in zip(bounds, bounds[1:], strict=False)
            if _total(stream, [p for p in range(first, last) if not dropped[p]])
            > LONG_CHAPTER_WORDS
        ]
        if not long:
            break
        for entry, position in zip(entries, positions, strict=True):
            if position is None or dropped[position] or entry.depth != deeper:
                continue
            if any(first < position < last for first, last in long):
                starts.setdefault(position, entry)
    return starts


def cut_chapters(
    stream: Sequence[StreamItem],
    entries: Sequence[TocEntry],
    *,
    keep_extras: bool = False,
    toc_depth: int | None = None,
    titles: dict[str, str] | None = None,
) -> ChapterCut:
    """Chapters of ``stream`` at ``entries``; ``titles`` maps files to their ``<title>``."""
    positions = _place(stream, entries)
    dropped, skipped = _drops(stream, entries, positions, keep_extras)
    depths = tuple(
        sorted({e.depth for e, p in zip(entries, positions, strict=True) if p is not None})
    )
    depths = depths or (1,)

    def starts_at(depth: int) -> dict[int, TocEntry]:
        starts: dict[int, TocEntry] = {}
        for entry, position in zip(entries, positions, strict=True):
            if position is None or dropped[position]:
                continue
            if entry.depth <= depth and (
                position not in starts or entry.depth > starts[position].depth
            ):
                starts[position] = entry  # the deepest entry names a place several share
        return starts

    if toc_depth is None:
        words = [
            (d, [_total(stream, b) for _, b in _cut(stream, dropped, starts_at(d))]) for d in depths
        ]
        depth = choose_depth(words)
        starts = _split_long(stream, dropped, starts_at(depth), entries, positions, depth, depths)
    else:
        depth = min(toc_depth, depths[-1])
        starts = starts_at(depth)
    sections, used = [], []
    for number, (entry, blocks) in enumerate(_cut(stream, dropped, starts), 1):
        items = [stream[p].item for p in blocks]
        title = entry.title if entry else ""
        headings = [i.text for i in items if isinstance(i, TextBlock) and i.kind == "heading"]
        file = stream[blocks[0]].file
        title = title or (headings[0] if headings else "") or (titles or {}).get(file, "")
        title = title or f"Chapter {number}"
        used.append(
            TocEntry(
                title,
                entry.href if entry else file,
                entry.fragment if entry else None,
                entry.depth if entry else depth,
            )
        )
        sections.append(
            Section(
                title,
                items[0].line,  # type: ignore[union-attr]
                tuple(_block(i) for i in items if isinstance(i, TextBlock)),
            )
        )
    placed = any(p is not None for p in positions)
    return ChapterCut(tuple(sections), tuple(used), depth, depths, tuple(skipped), placed)


def _block(item: TextBlock) -> Block:
    return Block(
        kind=item.kind,
        text=item.text,
        line=item.line,
        line_starts=item.line_starts,
        phonemes=tuple((written, ipa) for written, ipa, _ in item.phonemes),
    )
