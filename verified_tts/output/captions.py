"""Captions of a rendered book: SubRip and WebVTT per chapter, a sentence a cue.

Each sentence's cue runs from its first to its last sample in the chapter file (exact, from
assembly). Lines are filled word by word up to 42 characters, as captioners set them; a cue holds
two lines at most, so a sentence that needs more is shown as consecutive cues of two lines, each
timed by its words where word timings exist, else by its share of the sentence's characters.
The files are composed by the ``srt`` and ``webvtt-py`` libraries and written atomically, one
per chapter beside its audio's name: ``captions/NN-title.srt`` and ``.vtt``.
"""

from __future__ import annotations

import datetime
import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from verified_tts.output.timings import ChapterTimings, SentenceTiming
from verified_tts.storage.atomic import write_text_atomic

__all__ = [
    "CAPTION_FORMATS",
    "CAPTIONS_DIR",
    "LINE_CHARS",
    "Cue",
    "chapter_cues",
    "split_lines",
    "write_captions",
]

CAPTION_FORMATS = ("srt", "vtt")
CAPTIONS_DIR = "captions"
LINE_CHARS = 42
_LINES_PER_CUE = 2


@dataclass(frozen=True)
class Cue:
    start_s: float
    end_s: float
    lines: tuple[str, ...]
    name: str  # the id of the sentence it shows ("-2", "-3" for its later cues)


def split_lines(words: Sequence[str], width: int = LINE_CHARS) -> list[list[int]]:
    """The word indices of each line, filled greedily up to ``width`` characters (a longer
    word stands alone on its line)."""
    lines: list[list[int]] = []
    length = 0
    for index, word in enumerate(words):
        if lines and length + 1 + len(word) <= width:
            lines[-1].append(index)
            length += 1 + len(word)
        else:
            lines.append([index])
            length = len(word)
    return lines


def _sentence_cues(sentence: SentenceTiming) -> list[Cue]:
    words = sentence.text.split()
    if not words:
        return []
    lines = split_lines(words)
    groups = [lines[k : k + _LINES_PER_CUE] for k in range(0, len(lines), _LINES_PER_CUE)]
    start, end = sentence.start_s, sentence.end_s
    timed = len(sentence.words) == len(words)
    total = sum(len(w) + 1 for w in words)
    cues: list[Cue] = []
    used = 0
    for number, group in enumerate(groups):
        if number == len(groups) - 1:
            cue_end = end
        elif timed:
            cue_end = sentence.words[groups[number + 1][0][0]].start_s
        else:
            used += sum(len(words[k]) + 1 for line in group for k in line)
            cue_end = start + (end - start) * used / total
        cue_start = cues[-1].end_s if cues else start
        text = tuple(" ".join(words[k] for k in line) for line in group)
        name = sentence.id if number == 0 else f"{sentence.id}-{number + 1}"
        cues.append(Cue(cue_start, max(cue_end, cue_start), text, name))
    return cues


def chapter_cues(chapter: ChapterTimings) -> list[Cue]:
    """The cues of a chapter, in order."""
    return [cue for sentence in chapter.sentences for cue in _sentence_cues(sentence)]


def _vtt_time(seconds: float) -> str:
    millis = int(round(seconds * 1000))
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{hours:02d}:{minutes:02d}:{rest // 1000:02d}.{rest % 1000:03d}"


def _srt_text(cues: Sequence[Cue]) -> str:
    import srt

    subtitles = [
        srt.Subtitle(
            index=number,
            start=datetime.timedelta(milliseconds=round(cue.start_s * 1000)),
            end=datetime.timedelta(milliseconds=round(cue.end_s * 1000)),
            content="\n".join(cue.lines),
        )
        for number, cue in enumerate(cues, 1)
    ]
    return srt.compose(subtitles, reindex=False)


def _vtt_text(cues: Sequence[Cue]) -> str:
    import webvtt

    captions = webvtt.WebVTT()
    for cue in cues:
        captions.captions.append(
            webvtt.Caption(
                _vtt_time(cue.start_s),
                _vtt_time(cue.end_s),
                [html.escape(line, quote=False) for line in cue.lines],
                identifier=cue.name,
            )
        )
    return captions.content


def write_captions(out_dir: Path, chapter: ChapterTimings, formats: Sequence[str]) -> list[str]:
    """Write the chapter's captions in each of ``formats`` (srt, vtt); returns their paths
    relative to ``out_dir``."""
    cues = chapter_cues(chapter)
    written = []
    for kind in formats:
        if kind not in CAPTION_FORMATS:
            continue
        relative = f"{CAPTIONS_DIR}/{chapter.stem}.{kind}"
        text = _srt_text(cues) if kind == "srt" else _vtt_text(cues)
        write_text_atomic(out_dir / relative, text)
        written.append(relative)
    return written
