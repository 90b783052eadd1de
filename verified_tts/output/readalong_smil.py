"""The read-along EPUB's Media Overlay documents: a ``<par>`` per sentence (or word) and its clip.

:func:`sentence_entries` places every timed sentence beside its segment (which knows where it
stands in the book's XHTML) and its clip's end: the next sentence's first sample in the same
chapter file, or its own last for a chapter's last sentence, so a reading system that plays clip
after clip plays the pauses too. :func:`sentence_mark` is what
:func:`~verified_tts.output.readalong_xhtml.mark_document` wraps for a sentence and its words.
:func:`smil_document` writes one content document's overlay: a ``<par>`` per sentence piece, or
with words a ``<seq>`` per sentence holding a ``<par>`` per word, whose clips share the
sentence's exactly (a word from its start to the next word's; the first from the sentence's
start, the last to its clip's end). Clock values are milliseconds, rounded from samples.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from verified_tts.output.epub_package import clock
from verified_tts.output.readalong_xhtml import Mark, Piece
from verified_tts.output.timings import ChapterTimings, SentenceTiming
from verified_tts.text.book import Book, Segment

__all__ = ["Entry", "sentence_entries", "sentence_mark", "smil_document"]

_SMIL_NS = 'xmlns="http://www.w3.org/ns/SMIL" xmlns:epub="http://www.idpf.org/2007/ops"'


@dataclass
class Entry:
    """A sentence placed in a content document: its timing, chapter audio and clip end."""

    sentence: SentenceTiming
    chapter: ChapterTimings
    clip_end: int  # sample: the next sentence's start, or its own end
    segment: Segment | None


def sentence_entries(timings: Sequence[ChapterTimings], book: Book) -> list[Entry]:
    """Every sentence of the chapters, in order, with its segment of ``book`` and clip end."""
    segments = {(s.chapter, s.paragraph, s.sentence): s for s in book.segments}
    entries = []
    for chapter in timings:
        for number, sentence in enumerate(chapter.sentences):
            following = chapter.sentences[number + 1 : number + 2]
            end = following[0].start if following else sentence.end
            segment = segments.get((chapter.index, sentence.paragraph, sentence.number))
            entries.append(Entry(sentence, chapter, end, segment))
    return entries


def _word_spans(text: str) -> list[tuple[int, int]]:
    spans, position = [], 0
    for word in text.split():
        start = text.index(word, position)
        spans.append((start, start + len(word)))
        position = start + len(word)
    return spans


def sentence_mark(entry: Entry, words: bool) -> Mark | None:
    """What to wrap in the book's XHTML for the sentence (and its words); None when the
    reader could not say where the sentence stands in its file."""
    segment = entry.segment
    if segment is None or segment.source is None:
        return None
    span = segment.source.raw_span(0, len(segment.text))
    if span is None:
        return None
    children = []
    if words:
        for k, (a, b) in enumerate(_word_spans(segment.text)):
            raw = segment.source.raw_span(a, b)
            if raw is not None:
                children.append(Mark(f"{entry.sentence.id}-w{k + 1}", raw[0], raw[1]))
    return Mark(entry.sentence.id, span[0], span[1], tuple(children))


def _ms(sample: int, rate: int) -> int:
    return round(sample * 1000 / rate)


def _split(begin: int, end: int, pieces: Sequence[Piece]) -> list[tuple[str, int, int]]:
    """Each piece's share of ``[begin, end)`` ms, by its characters."""
    total = sum(max(p.chars, 1) for p in pieces)
    out, start, used = [], begin, 0
    for number, piece in enumerate(pieces):
        used += max(piece.chars, 1)
        stop = end if number == len(pieces) - 1 else begin + (end - begin) * used // total
        out.append((piece.id, start, max(stop, start)))
        start = stop
    return out


def _pars(entry: Entry, pieces: dict[str, list[Piece]], doc: str, audio: str, words: bool) -> str:
    rate = entry.chapter.sample_rate
    begin, end = _ms(entry.sentence.start, rate), _ms(entry.clip_end, rate)
    sentence = pieces.get(entry.sentence.id, [])
    if not sentence or end <= begin:
        return ""

    def par(piece_id: str, a: int, b: int) -> str:
        return (f'<par><text src="{doc}#{piece_id}"/><audio src="{audio}" '
                f'clipBegin="{clock(a)}" clipEnd="{clock(b)}"/></par>')  # fmt: skip

    timed = [
        (k, w) for k, w in enumerate(entry.sentence.words)
        if pieces.get(f"{entry.sentence.id}-w{k + 1}")
    ]  # fmt: skip
    if not words or not timed:
        return "".join(par(*clip) for clip in _split(begin, end, sentence))
    bounds = [begin] + [_ms(round(w.start_s * rate), rate) for _, w in timed[1:]] + [end]
    for k in range(1, len(bounds)):  # every clip at least 1 ms, all inside the sentence's
        bounds[k] = min(max(bounds[k], bounds[k - 1] + 1), end - (len(bounds) - 1 - k))
    inner = "".join(
        par(*clip)
        for (k, _), a, b in zip(timed, bounds, bounds[1:], strict=False)
        for clip in _split(a, b, pieces[f"{entry.sentence.id}-w{k + 1}"])
        if b > a
    )
    return f'<seq epub:textref="{doc}#{sentence[0].id}">{inner}</seq>'


def smil_document(
    path: str,
    document: str,
    entries: Sequence[Entry],
    pieces: dict[str, list[Piece]],
    audio: dict[int, str],
    words: bool,
) -> tuple[str, int]:
    """The overlay at ``path`` of the content document ``document`` (paths in the ZIP), and
    its duration in ms; ``audio``: each chapter's audio file in the ZIP."""
    folder = posixpath.dirname(path)
    doc = posixpath.relpath(document, folder)
    body = []
    duration = 0
    for entry in entries:
        href = posixpath.relpath(audio[entry.chapter.index], folder)
        pars = _pars(entry, pieces, doc, href, words)
        if pars:
            body.append(pars)
            rate = entry.chapter.sample_rate
            duration += _ms(entry.clip_end, rate) - _ms(entry.sentence.start, rate)
    text = (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<smil {_SMIL_NS} version="3.0">\n'
        "<body>\n" + "\n".join(body) + "\n</body>\n</smil>\n"
    )
    return text, duration
