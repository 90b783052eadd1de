"""Where the characters of a text that was read from markup stand in the file it came from.

A reader that builds its text from XHTML (entities decoded, whitespace collapsed, note references
and page numbers left out) keeps, for every character it keeps, the range of the decoded file it
came from. :class:`SourceMap` holds that as runs: a run of text whose characters are copied one
for one from the file (``text`` and ``raw`` ranges of the same length), or one decoded entity
(``&amp;`` is one character from five). A synthetic character (the space that stands for a
``<br/>``, or joins two lines of verse) has no run. The read-along EPUB uses the map to wrap a
sentence or a word of the book's own XHTML in an element of its own
(:mod:`verified_tts.output.readalong_xhtml`) without rewriting anything else in the file.
"""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["SourceMap", "chunk_runs", "join_maps", "normalise_pieces"]

# html.unescape's own pattern: what HTMLParser's convert_charrefs decodes in running text.
_CHARREF = re.compile(r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")

Run = tuple[int, int, int, int]  # (text start, text end, raw start, raw end)


@dataclass(frozen=True)
class SourceMap:
    """Runs that map a text's characters to ranges of the file ``file`` (offsets in its
    decoded characters)."""

    file: str
    runs: tuple[Run, ...]

    def _run_at(self, index: int) -> Run | None:
        position = bisect.bisect_right([run[0] for run in self.runs], index) - 1
        if position < 0:
            return None
        run = self.runs[position]
        return run if run[0] <= index < run[1] else None

    def raw_start(self, index: int) -> int | None:
        """Where the character at ``index`` begins in the file (None: a synthetic one)."""
        run = self._run_at(index)
        if run is None:
            return None
        linear = run[1] - run[0] == run[3] - run[2]
        return run[2] + (index - run[0]) if linear else run[2]

    def raw_end(self, index: int) -> int | None:
        """Where the character at ``index`` ends in the file (None: a synthetic one)."""
        run = self._run_at(index)
        if run is None:
            return None
        linear = run[1] - run[0] == run[3] - run[2]
        return run[2] + (index - run[0]) + 1 if linear else run[3]

    def raw_span(self, start: int, end: int) -> tuple[int, int] | None:
        """The file range from the first to the last character of text ``[start, end)``."""
        if end <= start:
            return None
        first, last = self.raw_start(start), self.raw_end(end - 1)
        if first is None or last is None or last <= first:
            return None
        return first, last

    def slice(self, start: int, end: int) -> SourceMap:
        """The map of text ``[start, end)``, its offsets counted from ``start``."""
        runs = []
        for t0, t1, r0, r1 in self.runs:
            if t1 <= start or t0 >= end:
                continue
            linear = t1 - t0 == r1 - r0
            a, b = max(t0, start), min(t1, end)
            if linear:
                runs.append((a - start, b - start, r0 + (a - t0), r0 + (b - t0)))
            else:
                runs.append((a - start, b - start, r0, r1))
        return SourceMap(self.file, tuple(runs))

    def shift(self, by: int) -> SourceMap:
        return SourceMap(self.file, tuple((a + by, b + by, c, d) for a, b, c, d in self.runs))


def join_maps(parts: Sequence[tuple[int, SourceMap | None]]) -> SourceMap | None:
    """One map of texts joined together: ``(offset in the joined text, map)`` per part; None
    when a part has no map or the parts come from different files."""
    if not parts or any(m is None for _, m in parts):
        return None
    files = {m.file for _, m in parts if m is not None}
    if len(files) != 1:
        return None
    runs: list[Run] = []
    for offset, source in parts:
        assert source is not None
        runs.extend(source.shift(offset).runs)
    return SourceMap(files.pop(), tuple(runs))


def chunk_runs(source: str, start: int, data: str) -> tuple[Run, ...] | None:
    """Runs of ``data``, the decoded text HTMLParser read from ``source`` at ``start``;
    None when the raw text does not decode to ``data`` (nothing is then claimed)."""
    runs: list[Run] = []
    text, raw = 0, start
    while text < len(data):
        if raw >= len(source):
            return None
        if source[raw] == "&":
            match = _CHARREF.match(source, raw)
            if match:
                decoded = html.unescape(match.group(0))
                if data[text : text + len(decoded)] != decoded:
                    return None
                runs.append((text, text + len(decoded), raw, match.end()))
                text, raw = text + len(decoded), match.end()
                continue
        if source[raw] != data[text]:
            return None
        if runs and runs[-1][1] == text and runs[-1][3] == raw and _linear(runs[-1]):
            runs[-1] = (runs[-1][0], text + 1, runs[-1][2], raw + 1)
        else:
            runs.append((text, text + 1, raw, raw + 1))
        text, raw = text + 1, raw + 1
    return tuple(runs)


def _linear(run: Run) -> bool:
    return run[1] - run[0] == run[3] - run[2]


def normalise_pieces(
    pieces: Iterable[tuple[str, tuple[Run, ...] | None]], file: str
) -> tuple[str, SourceMap | None]:
    """``" ".join("".join(texts).split())`` of the pieces, and the map of what is left.

    Each piece is a text and its runs (None for a synthetic piece). A collapsed run of
    whitespace keeps the range of its first character."""
    chars: list[str] = []
    spans: list[tuple[int, int] | None] = []
    for text, runs in pieces:
        owners: list[tuple[int, int] | None] = [None] * len(text)
        for t0, t1, r0, r1 in runs or ():
            for k in range(t0, t1):
                owners[k] = (
                    (r0 + k - t0, r0 + k - t0 + 1) if _linear((t0, t1, r0, r1)) else (r0, r1)
                )
        chars.extend(text)
        spans.extend(owners)
    out: list[str] = []
    kept: list[tuple[int, int] | None] = []
    pending: tuple[int, int] | None | bool = False  # False: no whitespace waiting
    for char, span in zip(chars, spans, strict=True):
        if char.isspace():
            if pending is False:
                pending = span
            continue
        if pending is not False and out:
            out.append(" ")
            kept.append(pending if isinstance(pending, tuple) else None)
        pending = False
        out.append(char)
        kept.append(span)
    text = "".join(out)
    runs: list[Run] = []
    for index, span in enumerate(kept):
        if span is None:
            continue
        last = runs[-1] if runs else None
        if (
            last is not None
            and last[1] == index
            and _linear(last)
            and last[3] == span[0]
            and span[1] == span[0] + 1
        ):
            runs[-1] = (last[0], index + 1, last[2], span[1])
        elif last is not None and last[1] == index and (last[2], last[3]) == span:
            runs[-1] = (last[0], index + 1, last[2], last[3])  # more of one decoded entity
        else:
            runs.append((index, index + 1, span[0], span[1]))
    return text, SourceMap(file, tuple(runs))
