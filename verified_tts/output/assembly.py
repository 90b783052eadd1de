"""Assembly: winners -> loudness-matched clips -> chapter files and the whole book, with pauses.

Each winner's leading and trailing silence is trimmed (so the pauses are ours, not the
generator's), its loudness brought to one target (ITU-R BS.1770 via pyloudnorm, with a peak
ceiling), and the clips are joined with pauses that grow from sentence to paragraph to chapter.
Chapter files and the book are written as WAV and FLAC at the generator's sample rate, each under
a temporary name and renamed into place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verified_tts.config import AssemblyOptions
from verified_tts.output.atomic import write_audio_atomic

__all__ = ["AssembledFile", "Placed", "assemble_book", "level_clip", "trim_silence"]

_SILENCE_DBFS = -45.0
_KEEP_EDGE_S = 0.05  # keep a breath of the clip's own edge so onsets are not clipped


@dataclass(frozen=True)
class Placed:
    """A winner ready for assembly: its audio, chapter and the pause that follows it."""

    audio: np.ndarray
    chapter: int
    chapter_title: str | None
    pause_after: str  # "sentence" | "paragraph" | "chapter" | "end"


@dataclass(frozen=True)
class AssembledFile:
    index: int | None  # chapter index, None for the whole book
    title: str | None
    wav: str  # paths relative to the output folder
    flac: str
    duration_s: float


def trim_silence(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Cut leading and trailing silence below -45 dBFS, keeping 50 ms at each edge."""
    if audio.size == 0:
        return audio
    frame = max(1, sample_rate // 100)
    count = len(audio) // frame
    if count == 0:
        return audio
    frames = audio[: count * frame].reshape(count, frame)
    level = 20 * np.log10(np.sqrt(np.mean(frames**2, axis=1)) + 1e-10)
    voiced = np.flatnonzero(level > _SILENCE_DBFS)
    if voiced.size == 0:
        return audio
    keep = int(_KEEP_EDGE_S * sample_rate)
    start = max(0, voiced[0] * frame - keep)
    end = min(len(audio), (voiced[-1] + 1) * frame + keep)
    return audio[start:end]


def level_clip(audio: np.ndarray, sample_rate: int, options: AssemblyOptions) -> np.ndarray:
    """Bring a clip to the target loudness, then under the peak ceiling."""
    import pyloudnorm

    audio = audio.astype(np.float64)
    if len(audio) >= int(0.4 * sample_rate) and np.any(audio):
        loudness = pyloudnorm.Meter(sample_rate).integrated_loudness(audio)
        if np.isfinite(loudness):
            audio = audio * 10 ** ((options.loudness_lufs - loudness) / 20)
    peak = float(np.max(np.abs(audio))) if audio.size else 0.0
    ceiling = 10 ** (options.peak_dbfs / 20)
    if peak > ceiling:
        audio = audio * (ceiling / peak)
    return audio.astype(np.float32)


def _slug(title: str | None, index: int) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", (title or "").lower()).strip("-")[:40].strip("-")
    return f"{index + 1:02d}-{words or 'chapter'}"


def _silence(seconds: float, sample_rate: int) -> np.ndarray:
    return np.zeros(int(round(seconds * sample_rate)), dtype=np.float32)


def _write(out_dir: Path, stem: str, audio: np.ndarray, sample_rate: int) -> tuple[str, str]:
    wav, flac = f"{stem}.wav", f"{stem}.flac"
    write_audio_atomic(out_dir / wav, audio, sample_rate, subtype="PCM_16")
    write_audio_atomic(out_dir / flac, audio, sample_rate, subtype="PCM_16")
    return wav, flac


def assemble_book(
    placed: Sequence[Placed], sample_rate: int, out_dir: Path, options: AssemblyOptions
) -> list[AssembledFile]:
    """Write one file per chapter and one for the book; returns chapters first, book last."""
    pauses = {
        "sentence": options.sentence_pause,
        "paragraph": options.paragraph_pause,
        "chapter": options.chapter_pause,
        "end": 0.0,
    }
    chapters: dict[int, list[np.ndarray]] = {}
    titles: dict[int, str | None] = {}
    for item in placed:
        clip = level_clip(trim_silence(item.audio, sample_rate), sample_rate, options)
        parts = chapters.setdefault(item.chapter, [_silence(options.lead_in, sample_rate)])
        titles[item.chapter] = item.chapter_title
        parts.append(clip)
        if item.pause_after not in ("chapter", "end"):
            parts.append(_silence(pauses[item.pause_after], sample_rate))
    written = []
    book_parts: list[np.ndarray] = []
    for position, (index, parts) in enumerate(sorted(chapters.items())):
        chapter_audio = np.concatenate([*parts, _silence(options.tail, sample_rate)])
        wav, flac = _write(
            out_dir, f"chapters/{_slug(titles[index], index)}", chapter_audio, sample_rate
        )
        written.append(
            AssembledFile(
                index, titles[index], wav, flac, round(len(chapter_audio) / sample_rate, 3)
            )
        )
        if position:
            book_parts.append(_silence(options.chapter_pause, sample_rate))
        book_parts.append(np.concatenate(parts))
    book_parts.append(_silence(options.tail, sample_rate))
    book = np.concatenate(book_parts) if book_parts else np.zeros(0, dtype=np.float32)
    wav, flac = _write(out_dir, "book", book, sample_rate)
    written.append(AssembledFile(None, None, wav, flac, round(len(book) / sample_rate, 3)))
    return written
