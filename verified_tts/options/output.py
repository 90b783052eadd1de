"""``[assembly]``, ``[production]`` and ``[dub]``: how winners become the deliverable."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from verified_tts.errors import UserError
from verified_tts.options.schema import option

__all__ = [
    "EPUB_AUDIO",
    "FORMATS",
    "READ_ALONG_LEVELS",
    "AssemblyOptions",
    "DubOptions",
    "ProductionOptions",
]

# what a render can deliver; the last three are the read-along outputs (output/readalong.py)
FORMATS = ("wav", "flac", "m4b", "mp3", "epub3", "srt", "vtt")
READ_ALONG_LEVELS = ("sentences", "words")
# the audio an EPUB 3 may carry (its core media types): suffix and media type
EPUB_AUDIO = {"aac": ("m4a", "audio/mp4"), "mp3": ("mp3", "audio/mpeg")}


@dataclass(frozen=True)
class AssemblyOptions:
    """``[assembly]``: pauses (seconds) between segments and the levels of every chapter."""

    sentence_pause: float = option(0.35, "Seconds between sentences")
    paragraph_pause: float = option(0.8, "Seconds between paragraphs")
    chapter_pause: float = option(2.0, "Seconds between chapters in the book file")
    lead_in: float = option(0.75, "Room tone at a chapter's head (ACX asks for 0.5-1 s)")
    tail: float = option(2.0, "Room tone at a chapter's tail (ACX asks for 1-5 s)")
    loudness_lufs: float = option(-20.0, "Each clip's loudness before the chapter is mastered")
    peak_dbfs: float = option(-3.0, "Each clip's peak ceiling, dBFS")
    master: bool = option(True, "Master every chapter to ACX levels (RMS, peak, room tone)")
    rms_db: float = option(-20.0, "Chapter RMS, dB: the middle of ACX's -23..-18 dB")
    room_tone_db: float | None = option(
        -75.0, 'Low noise instead of digital silence, dB; "off": digital silence', none="off"
    )


def _comma_list(value: Any) -> Any:
    """``"m4b,mp3"`` (the CLI's --format, or a string in the file) as a list."""
    return value.split(",") if isinstance(value, str) else value


@dataclass(frozen=True)
class ProductionOptions:
    """``[production]``: what is read from the input and what is delivered."""

    formats: tuple[str, ...] = option(
        ("wav", "flac"),
        "Any of wav, flac, m4b, mp3, epub3 (read-along EPUB 3), srt, vtt (captions); a list, or "
        "comma-separated",
        parse=_comma_list,
    )  # fmt: skip
    chapters: str | None = option(None, 'Chapters to render, 1-based: "3-7" or "1,4-5"')
    keep_extras: bool = option(
        False,
        "Also read front matter and notes (EPUB; in plain text, the title page, dedication and "
        "what follows THE END)",
    )
    lexicon: str | None = option(None, "Pronunciation lexicon (TOML)", path=True)
    cast: str | None = option(
        None, "Cast file (TOML, `verified-tts cast`): dialogue in each character's voice", path=True
    )
    credits: bool = option(False, "Opening and closing credits as their own chapters")
    narrator: str | None = option(None, "Narrator's name (tags, credits)")
    author: str | None = option(None, "Author (tags, credits); overrides the EPUB's")
    split_hours: float | None = option(None, "M4B parts of at most this many hours")
    toc_depth: int | None = option(
        None, "EPUB: chapters at this table-of-contents depth; default: the chapter-sized level"
    )
    language_override: str | None = option(
        None, "Read the book as this language (BCP 47), whatever its dc:language says"
    )
    read_along: str = option(
        "sentences", 'What epub3 highlights and timings.json holds: "sentences" or "words"'
    )
    epub_audio: str = option("aac", 'The audio inside book.epub: "aac" (AAC in MP4) or "mp3"')

    def __post_init__(self) -> None:
        formats = tuple(f.strip().lower() for f in self.formats if f.strip())
        object.__setattr__(self, "formats", formats)
        unknown = [f for f in formats if f not in FORMATS]
        if unknown or not formats:
            raise UserError(
                f"unknown output format '{','.join(unknown)}': choose from {', '.join(FORMATS)} "
                "(comma-separated, e.g. --format m4b,mp3)"
            )
        if self.split_hours is not None and not self.split_hours > 0:
            raise UserError(f"--split-hours must be positive (got {self.split_hours})")
        if self.toc_depth is not None and (type(self.toc_depth) is not int or self.toc_depth < 1):
            raise UserError(f"--toc-depth must be a whole number from 1 (got {self.toc_depth!r})")
        if self.read_along not in READ_ALONG_LEVELS:
            raise UserError(
                f"--read-along '{self.read_along}': choose sentences (a highlight a sentence) or "
                "words"
            )
        if self.epub_audio not in EPUB_AUDIO:
            raise UserError(
                f"--epub-audio '{self.epub_audio}': an EPUB 3 carries audio as aac (AAC in MP4) "
                "or mp3 only (its core media types); choose one of them"
            )


@dataclass(frozen=True)
class DubOptions:
    """``[dub]``: timing, stretch and mixing of a dub (its CLI flags override them)."""

    speed_limit: float = option(1.25, "The most a winner is sped up (1.25 = 25% faster)")
    max_extend_s: float = option(1.0, "How far a slot may reach into the silence after its cue")
    min_gap_s: float = option(0.1, "Silence always kept before the next cue starts")
    tail_s: float = option(1.0, "Silence after the last cue's end (without duration)")
    duration: float | None = option(None, "The track's length in seconds; default: last end + tail")
    duck_db: float = option(12.0, "How far the original mix goes down under speech, at least")
    voices: Mapping[str, str] = option(factory=dict, doc="[dub.voices] speaker NAME = voice")
    attack_s: float = option(0.15, "The bed's ramp down before a line, seconds")
    release_s: float = option(0.3, "The bed's ramp back up after a line, seconds")
    dialogue_ratio_db: float = option(
        10.0, "Dialogue above the bed under every line, at least (dB)"
    )
    loudness_lufs: float = option(-23.0, "Integrated loudness of the mix (EBU R128; -16 streaming)")
    true_peak_dbtp: float = option(-1.0, "Ceiling of the mix's true peak, dBTP")
    language: str | None = option(None, "The dub's language tag; default: the voice's language")
    original_language: str | None = option(
        None, "The film's own language, for its kept track where the film does not tag it"
    )

    def __post_init__(self) -> None:
        if not (math.isfinite(self.speed_limit) and 1.0 <= self.speed_limit <= 4.0):
            raise UserError(
                f"--speed-limit must be between 1.0 (never stretch) and 4.0 "
                f"(got {self.speed_limit})"
            )
        for name in ("max_extend_s", "min_gap_s", "tail_s", "duck_db", "attack_s", "release_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise UserError(f"[dub] {name} must be a number >= 0 (got {value})")
        if not (math.isfinite(self.loudness_lufs) and -70.0 < self.loudness_lufs < 0.0):
            raise UserError(
                f"--loudness must be an integrated loudness in LUFS between -70 and 0, e.g. -23 "
                f"(EBU R128) or -16 (streaming) (got {self.loudness_lufs})"
            )
        if not (math.isfinite(self.true_peak_dbtp) and -20.0 <= self.true_peak_dbtp <= 0.0):
            raise UserError(
                f"--true-peak must be a ceiling in dBTP between -20 and 0, e.g. -1 "
                f"(got {self.true_peak_dbtp})"
            )
        if not math.isfinite(self.dialogue_ratio_db):
            raise UserError(
                f"--dialogue-ratio must be a number of dB (got {self.dialogue_ratio_db})"
            )
        if self.duration is not None and not (math.isfinite(self.duration) and self.duration > 0):
            raise UserError(
                f"--duration must be a positive number of seconds (got {self.duration})"
            )
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in self.voices.items()):
            raise UserError('[dub.voices] maps speaker names to voices: NAME = "voice"')
