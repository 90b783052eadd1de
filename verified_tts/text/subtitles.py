"""Subtitles in: SRT and WebVTT files into timed, clean, speakable cues for dubbing.

:func:`load_subtitles` reads a file (every problem a user can cause becomes one
:class:`~verified_tts.errors.UserError` line naming the cue number and the line), parses it with
the ``srt`` or ``webvtt-py`` library, and cleans each cue's text for a TTS: lines are joined;
HTML-style tags (``<i>``, ``<font>``, WebVTT ``<c.x>``, ``<b>``, inline timestamps) and ASS
override blocks (``{\\an8}``) are stripped, entities unescaped, ruby annotations, sound
descriptions in square brackets (``[door slams]``) and music notes dropped, dialogue dashes removed
(a line "- Hi. - Hello." holds two speakers' words: both are said, with a warning that one voice
says them). A speaker is read from a WebVTT voice span (``<v Anna>``), a leading ``NAME:`` (upper
case, or any name the voice map knows, so "Note: ..." stays text) or a leading ``[NAME]`` that the
voice map knows (other bracketed text, "[DOOR SLAMS]" as much as "[Anna]" without a map, is a sound
description and is dropped); the first speaker of a cue voices all of it. Two cases are warnings
with a fixed rule instead of errors: a cue with nothing to say (empty, or only sound descriptions)
or of zero length is skipped, and cues that overlap in time are cut so that the earlier one ends
where the later one starts (cues that start at the same moment are joined into one). Cues out of
time order are sorted, with a warning. An end before its start is an error, and so is a cue too
short for any voice to say (its words at :data:`FASTEST_CPS` characters a second need more than all
the time up to the next cue). A file in Windows-1252 rather than UTF-8 is read as such, with a
warning naming the cue of its first non-UTF-8 byte; a UTF-8 byte-order mark is accepted.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from verified_tts.errors import UserError
from verified_tts.text.textfile import read_text_file

__all__ = [
    "Cue",
    "SkippedCue",
    "SubtitleFormat",
    "Subtitles",
    "clean_cue_text",
    "format_timestamp",
    "load_subtitles",
    "parse_subtitles",
    "voice_for",
]

SubtitleFormat = Literal["srt", "vtt"]
# characters a second no voice says faster: fast speech is 15-20, a speed limit adds a quarter
FASTEST_CPS = 50


@dataclass(frozen=True)
class Cue:
    """One cue to voice: its times, the words to say and who says them."""

    index: int  # 1-based position among the file's cues, as the errors and dub.json count them
    start: float  # seconds
    end: float
    text: str  # what is said: markup, speaker prefix and sound descriptions removed, one line
    speaker: str | None  # the speaker as written in the file, if any
    line: int  # 1-based line of the cue's timing line
    identifier: str | None = None  # the SRT number or WebVTT cue id, as written
    raw: str = ""  # the cue's text as written


@dataclass(frozen=True)
class SkippedCue:
    """A cue that is not voiced, and why."""

    index: int
    line: int
    start: float
    end: float
    raw: str
    reason: str


@dataclass(frozen=True)
class Subtitles:
    """A parsed subtitle file: cues to voice in time order, skipped cues, warnings."""

    format: SubtitleFormat
    cues: tuple[Cue, ...]
    skipped: tuple[SkippedCue, ...] = ()
    warnings: tuple[str, ...] = ()


# --- text cleaning ---------------------------------------------------------------------------

_VOICE_SPAN = re.compile(r"<v(?:\.[^\s>]*)?\s+([^>]+?)\s*>")
_RUBY_TEXT = re.compile(r"<(rt|rp)>.*?</\1>", re.DOTALL)
_TAG = re.compile(r"</?[A-Za-z][^<>]*>|<\d[\d:.]*>|</[A-Za-z]*>")  # incl. <00:00:03.500>
_ASS_BLOCK = re.compile(r"\{\\[^{}]*\}")  # {\an8}, {\i1}, {\c&H00FF00&}
_ASS_BREAK = re.compile(r"\\[Nnh]")  # ASS line breaks that leak into SRT files
_SOUND = re.compile(r"\[[^\[\]]*\]")  # [door slams], [MUSIC]
_NOTES = re.compile(r"[♪♫]+")  # sung lines are marked with music notes
_DASH = re.compile(r"^[-–—]+\s*")  # "- Hi." "- Hello." dialogue in one cue
# "- Hi. - Hello." on one line: a dash after a sentence's end starts the second speaker's line
_INLINE_DASH = re.compile(r"(?<=[.!?…\"'’”])\s+[-–—]+\s*(?=\S)")
_BRACKET_SPEAKER = re.compile(r"^\[\s*([^\[\]]{1,40}?)\s*\]\s*(\S.*)$")
_COLON_SPEAKER = re.compile(r"^([^\W\d_][\w .'’-]{0,39}?)\s*:\s+(\S.*)$")
_SPACES = re.compile(r"\s+")


def _dialogue_lines(text: str) -> list[str]:
    """The cue's lines, a line that starts with a dialogue dash split where a later dash
    starts the next speaker's words ("- Hi. - Hello.")."""
    lines: list[str] = []
    for line in text.splitlines():
        lines.extend(_INLINE_DASH.split(line) if _DASH.match(line.strip()) else [line])
    return lines


def _turns(raw: str) -> int:
    """How many speakers' lines a cue marks with dialogue dashes (0: none marked)."""
    text = _ASS_BLOCK.sub("", _TAG.sub("", raw))
    dashed = [line for line in text.splitlines() if _DASH.match(line.strip())]
    return sum(len(_INLINE_DASH.split(line)) for line in dashed)


def _is_speaker_name(name: str, known: frozenset[str]) -> bool:
    # Upper case ("ANNA:", "DR. NO:") is the subtitle convention for names; anything else is a
    # name only when the voice map knows it, so "Note: the door" stays text.
    letters = [c for c in name if c.isalpha()]
    return bool(letters) and (name.upper() == name or name.casefold() in known)


def clean_cue_text(
    raw: str, known_speakers: Iterable[str] = ()
) -> tuple[str, str | None, tuple[str, ...]]:
    """(text to say, speaker or None, other speakers named) for one cue's text as written."""
    known = frozenset(name.casefold() for name in known_speakers)
    speakers: list[str] = []
    voice = _VOICE_SPAN.search(raw)
    if voice:
        speakers.append(voice.group(1).strip())
    text = _RUBY_TEXT.sub("", raw)
    text = _TAG.sub("", text)
    text = _ASS_BLOCK.sub("", text)
    text = _ASS_BREAK.sub("\n", text)
    text = html.unescape(text).replace("\u00a0", " ")
    lines = []
    for line in _dialogue_lines(text):
        line = _DASH.sub("", line.strip())
        match = _BRACKET_SPEAKER.match(line)
        # "[ANNA] Hi" and "[DOOR SLAMS] Hi" look alike: only the voice map tells a name
        if match and match.group(1).casefold() in known:
            speakers.append(match.group(1))
            line = match.group(2)
        else:
            match = _COLON_SPEAKER.match(line)
            if match and _is_speaker_name(match.group(1).strip(), known):
                speakers.append(match.group(1).strip())
                line = match.group(2)
        line = _NOTES.sub(" ", _SOUND.sub(" ", line))
        line = _DASH.sub("", line.strip())
        if line:
            lines.append(line)
    words = _SPACES.sub(" ", " ".join(lines)).strip()
    if not any(char.isalnum() for char in words):
        words = ""
    first = speakers[0] if speakers else None
    others = tuple(
        dict.fromkeys(s for s in speakers[1:] if s.casefold() != (first or "").casefold())
    )
    return words, first, others


def voice_for(speaker: str | None, voices: Mapping[str, str]) -> str | None:
    """The voice the map gives ``speaker`` (names match case-insensitively), else None."""
    if speaker is None:
        return None
    folded = {name.casefold(): voice for name, voice in voices.items()}
    return folded.get(speaker.casefold())


def format_timestamp(seconds: float, *, separator: str = ",") -> str:
    """``HH:MM:SS,mmm`` (SRT) or, with ``separator="."``, WebVTT's ``HH:MM:SS.mmm``."""
    millis = max(0, round(seconds * 1000))
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{millis:03d}"


# --- reading ---------------------------------------------------------------------------------


def _cue_at_line(lines: Sequence[str], line: int) -> int:
    """The number of the cue that line ``line`` (1-based) belongs to: timing lines up to it."""
    return sum("-->" in text for text in lines[:line])


def _where(name: str, lines: Sequence[str], line: int) -> str:
    cue = _cue_at_line(lines, line)
    return f"{name}: cue {cue} (line {line})" if cue else f"{name}: line {line} (before any cue)"


def _seconds(stamp: str) -> float:
    """Seconds of a ``[HH:]MM:SS.mmm`` stamp as webvtt-py writes it back."""
    parts = stamp.strip().replace(",", ".").split(":")
    total = 0.0
    for part in parts:
        total = total * 60 + float(part)
    return total


_SRT_TIMING = re.compile(
    r"^\s*\d+:[0-5]?\d:[0-5]?\d[,.:]\d{1,3}\s*-->\s*\d+:[0-5]?\d:[0-5]?\d[,.:]\d{1,3}(\s.*)?$"
)
_VTT_TIMING = re.compile(
    r"^\s*(?:\d+:)?[0-5]?\d:[0-5]?\d\.\d{1,3}\s*-->\s*(?:\d+:)?[0-5]?\d:[0-5]?\d\.\d{1,3}(\s.*)?$"
)
_SRT_EXAMPLE = "00:01:02,500 --> 00:01:04,000"
_VTT_EXAMPLE = "00:01:02.500 --> 00:01:04.000"


def _blocks(lines: Sequence[str], first: int = 0) -> list[tuple[int, list[str]]]:
    """(0-based first line, lines) of each run of non-blank lines from ``first`` on."""
    blocks: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = first
    for number in range(first, len(lines)):
        if lines[number].strip():
            if not current:
                start = number
            current.append(lines[number])
        elif current:
            blocks.append((start, current))
            current = []
    if current:
        blocks.append((start, current))
    return blocks


def _check_block_timings(
    name: str,
    lines: Sequence[str],
    blocks: Sequence[tuple[int, list[str]]],
    pattern: re.Pattern[str],
    example: str,
    *,
    text_may_continue: bool = False,
) -> list[int]:
    """0-based timing line of every cue block; a UserError for a block the parser would drop.

    With ``text_may_continue`` (SRT, where ``srt`` reads a blank line inside a cue's text as part
    of the text) a block without a timing line continues the previous cue, unless it starts with
    a bare cue number: that is a cue that lost its timing line, which ``srt`` would silently glue
    onto the previous cue's text.
    """
    timing_lines: list[int] = []
    for start, block in blocks:
        offset = next((i for i, text in enumerate(block[:2]) if "-->" in text), None)
        cue = len(timing_lines) + 1
        if offset is None:
            numbered = bool(re.fullmatch(r"\s*\d+\s*", block[0]))
            if text_may_continue and timing_lines and not numbered:
                continue
            what = f"cue {block[0].strip()}" if numbered else f"'{block[0].strip()[:40]}'"
            after = f"after cue {cue - 1}" if cue > 1 else "before the first cue"
            raise UserError(
                f"{name}: line {start + 1} ({after}): {what} has no timing line; "
                f"a cue is a number or id, a timing line such as {example}, then its text"
            )
        timing = block[offset]
        if not pattern.match(timing):
            raise UserError(
                f"{name}: cue {cue} (line {start + offset + 1}): malformed timing line "
                f"'{timing.strip()}'; write it as {example}"
            )
        timing_lines.append(start + offset)
    return timing_lines


def _parse_srt(source: str, name: str) -> list[tuple[int, str | None, float, float, str]]:
    import srt

    lines = source.splitlines()
    blocks = _blocks(lines)
    # srt stops at the first malformed block with a character offset; checking each block first
    # gives the user the cue and line instead, and pairs every parsed cue with its timing line.
    timing_lines = _check_block_timings(
        name, lines, blocks, _SRT_TIMING, _SRT_EXAMPLE, text_may_continue=True
    )
    try:
        parsed = list(srt.parse(source))
    except srt.SRTParseError as error:
        line = source[: error.expected_start].count("\n") + 1
        raise UserError(
            f"{_where(name, lines, line)}: cannot read '{error.unmatched_content.strip()[:60]}' "
            f"as a cue; a cue is a number, a timing line such as {_SRT_EXAMPLE}, then its text"
        ) from None
    except ValueError as error:  # out-of-range fields (e.g. minute 75) raise from datetime
        raise UserError(f"{name}: a timestamp is out of range ({error})") from None
    if len(parsed) != len(timing_lines):
        raise UserError(
            f"{name}: found {len(timing_lines)} timing lines but could read {len(parsed)} cues; "
            f"check that every cue is a number, a timing line such as {_SRT_EXAMPLE}, then text"
        )
    return [
        (
            timing + 1,
            str(subtitle.index) if subtitle.index is not None else None,
            subtitle.start.total_seconds(),
            subtitle.end.total_seconds(),
            subtitle.content,
        )
        for subtitle, timing in zip(parsed, timing_lines, strict=True)
    ]


def _parse_vtt(source: str, name: str) -> list[tuple[int, str | None, float, float, str]]:
    import webvtt
    from webvtt.errors import MalformedCaptionError, MalformedFileError

    lines = source.splitlines()
    if not lines or not re.match(r"^WEBVTT(\s|$)", lines[0]):
        raise UserError(
            f"{name}: line 1: a WebVTT file starts with the line 'WEBVTT' "
            f"(found '{lines[0][:40] if lines else ''}'); add it, or name an SRT file .srt"
        )
    header_end = next((i for i, text in enumerate(lines) if not text.strip()), len(lines))
    blocks = [
        (start, block)
        for start, block in _blocks(lines, header_end)
        if not re.match(r"^(NOTE|STYLE|REGION)(\s|$)", block[0])
    ]
    timing_lines = _check_block_timings(name, lines, blocks, _VTT_TIMING, _VTT_EXAMPLE)
    try:
        captions = webvtt.from_string(source).captions
    except (MalformedCaptionError, MalformedFileError) as error:
        raise UserError(f"{name}: not valid WebVTT: {error}") from None
    if len(captions) != len(timing_lines):
        raise UserError(
            f"{name}: found {len(timing_lines)} cue timing lines but could read "
            f"{len(captions)} cues; check every timing line reads like {_VTT_EXAMPLE}"
        )
    return [
        (
            timing + 1,
            caption.identifier,
            _seconds(caption.start),
            _seconds(caption.end),
            "\n".join(caption.lines),
        )
        for caption, timing in zip(captions, timing_lines, strict=True)
    ]


def _sniff(path: Path, source: str) -> SubtitleFormat:
    suffix = path.suffix.lower()
    if suffix in (".srt", ".vtt"):
        return "vtt" if suffix == ".vtt" else "srt"
    return "vtt" if source.lstrip().startswith("WEBVTT") else "srt"


def _resolve_overlaps(
    cues: list[Cue], name: str, warnings: list[str]
) -> tuple[list[Cue], list[str]]:
    """Cut each cue at the start of the next; join cues that start at the same moment."""
    resolved: list[Cue] = []
    for cue in cues:
        if resolved and cue.start <= resolved[-1].start + 1e-6:
            previous = resolved[-1]
            warnings.append(
                f"{name}: cue {cue.index} (line {cue.line}) starts together with cue "
                f"{previous.index}: voiced as one line with it"
            )
            resolved[-1] = replace(
                previous,
                end=max(previous.end, cue.end),
                text=f"{previous.text} {cue.text}",
                raw=f"{previous.raw}\n{cue.raw}",
            )
            continue
        if resolved and cue.start < resolved[-1].end - 1e-6:
            previous = resolved[-1]
            warnings.append(
                f"{name}: cue {previous.index} (line {previous.line}) overlaps cue {cue.index} "
                f"by {previous.end - cue.start:.3f} s: cue {previous.index} now ends where "
                f"cue {cue.index} starts ({format_timestamp(cue.start)})"
            )
            resolved[-1] = replace(previous, end=cue.start)
        resolved.append(cue)
    return resolved, warnings


def parse_subtitles(
    source: str,
    format: SubtitleFormat,
    *,
    name: str = "<subtitles>",
    known_speakers: Iterable[str] = (),
) -> Subtitles:
    """Parse subtitle text; errors name ``name``, the cue and the line. See the module docstring."""
    rows = _parse_srt(source, name) if format == "srt" else _parse_vtt(source, name)
    known = tuple(known_speakers)
    cues: list[Cue] = []
    skipped: list[SkippedCue] = []
    warnings: list[str] = []
    for index, (line, identifier, start, end, raw) in enumerate(rows, 1):
        where = f"{name}: cue {index} (line {line})"
        if end < start:
            raise UserError(
                f"{where} ends ({format_timestamp(end)}) before it starts "
                f"({format_timestamp(start)}); fix its timing line"
            )
        text, speaker, others = clean_cue_text(raw, known)
        reason = None
        if not text:
            shown = raw.strip().replace("\n", " ")[:40]
            reason = f"nothing to say ('{shown}')" if shown else "empty"
        elif end == start:
            reason = "zero length (starts and ends at the same time)"
        if reason:
            warnings.append(f"{where} skipped: {reason}")
            skipped.append(SkippedCue(index, line, start, end, raw, reason))
            continue
        if others:
            warnings.append(
                f"{where} names several speakers ({speaker}, {', '.join(others)}): "
                f"all of it is voiced as {speaker}"
            )
        elif _turns(raw) > 1:
            warnings.append(
                f"{where} holds {_turns(raw)} speakers' lines ('{' '.join(raw.split())[:40]}'): "
                f"voiced as one line in {'the voice of ' + speaker if speaker else 'one voice'}; "
                "split the cue to give each speaker a voice"
            )
        cues.append(Cue(index, start, end, text, speaker, line, identifier, raw))
    if any(b.start < a.start for a, b in zip(cues, cues[1:], strict=False)):
        warnings.append(f"{name}: cues are not in time order; they are voiced in time order")
        cues.sort(key=lambda cue: (cue.start, cue.index))
    cues, warnings = _resolve_overlaps(cues, name, warnings)
    _check_sayable(cues, name)
    return Subtitles(format, tuple(cues), tuple(skipped), tuple(warnings))


def _check_sayable(cues: Sequence[Cue], name: str) -> None:
    """A UserError for the first cue whose words no voice can say in the time it has: even all
    the time up to the next cue's start (a line may run into the silence after its cue) at
    :data:`FASTEST_CPS` characters a second, well beyond any speaker's pace."""
    for position, cue in enumerate(cues):
        room_end = cues[position + 1].start if position + 1 < len(cues) else cue.end + 1.0
        room = max(cue.end, room_end) - cue.start
        needed = len(cue.text) / FASTEST_CPS
        if room < needed:
            raise UserError(
                f"{name}: cue {cue.index} (line {cue.line}) has {room:.3f} s for "
                f"'{cue.text[:40]}', which takes at least {needed:.2f} s to say even at "
                f"{FASTEST_CPS} characters a second: give it a later end time (or the next cue "
                "a later start) or shorten its text"
            )


def load_subtitles(
    path: str | os.PathLike[str], *, known_speakers: Iterable[str] = ()
) -> Subtitles:
    """Read and parse an SRT or WebVTT file (by suffix, else by its first line)."""
    path = Path(path)
    legacy: list[str] = []
    source = read_text_file(
        path,
        kind="subtitle file",
        legacy_encoding="cp1252",
        on_legacy=legacy.append,
        expected="an SRT or WebVTT text file",
        empty_hint="it needs cues with times and text (SRT or WebVTT)",
        locate=lambda data, offset: _where(
            str(path),
            data.decode("utf-8", errors="replace").splitlines(),
            data[:offset].count(b"\n") + 1,
        ),
    )
    subtitles = parse_subtitles(
        source, _sniff(path, source), name=str(path), known_speakers=known_speakers
    )
    if legacy:
        subtitles = replace(subtitles, warnings=(*legacy, *subtitles.warnings))
    if not subtitles.cues:
        raise UserError(f"{path} has no cue with anything to say; nothing to dub")
    return subtitles
