"""Assembly: winners -> loudness-matched clips -> chapter files and the whole book, with pauses.

Each winner's leading and trailing silence is trimmed (so the pauses are ours, not the
generator's), its loudness brought to one target (ITU-R BS.1770 via pyloudnorm, with a peak
ceiling), and the clips are joined with pauses that grow from sentence to paragraph, with room
tone at each chapter's head and tail. Each chapter is then mastered to ACX levels
(:mod:`verified_tts.output.acx`) and written at the generator's sample rate, one chapter at a time,
each file under a temporary name and renamed into place; the book file is concatenated from the
chapter files in blocks.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verified_tts.atomic import write_audio_atomic
from verified_tts.options import AssemblyOptions
from verified_tts.output.acx import master
from verified_tts.output.encode import grid_samples, write_pcm

__all__ = [
    "AssembledFile",
    "Placed",
    "assemble_book",
    "chapter_path",
    "level_clip",
    "trim_silence",
    "write_book_files",
    "write_chapter",
]

_SILENCE_DBFS = -45.0
_KEEP_EDGE_S = 0.05  # keep a breath of the clip's own edge so onsets are not clipped


@dataclass(frozen=True)
class Placed:
    """A winner ready for assembly: its audio (or a function that loads it, so a long book is
    read from the store one chapter at a time), chapter and the pause that follows it."""

    audio: np.ndarray | Callable[[], np.ndarray]
    chapter: int
    chapter_title: str | None
    pause_after: str  # "sentence" | "paragraph" | "chapter" | "end"
    pause_before: float | None = None  # seconds: replaces the pause after the previous clip

    def load(self) -> np.ndarray:
        return self.audio() if callable(self.audio) else self.audio


@dataclass(frozen=True)
class AssembledFile:
    index: int | None  # chapter index, None for the whole book
    title: str | None
    wav: str | None  # paths relative to the output folder (None: format not asked for)
    flac: str | None
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


def _chapters(placed: Iterable[Placed]) -> Iterator[tuple[int, str | None, list[Placed]]]:
    """Consecutive runs of one chapter's winners, in book order."""
    for index, group in itertools.groupby(placed, key=lambda item: item.chapter):
        items = list(group)
        yield index, items[0].chapter_title, items


def _chapter_audio(
    items: Sequence[Placed], sample_rate: int, options: AssemblyOptions
) -> np.ndarray:
    pauses = {
        "sentence": options.sentence_pause,
        "paragraph": options.paragraph_pause,
        "chapter": 0.0,
        "end": 0.0,
    }
    parts = [_silence(options.lead_in, sample_rate)]
    for position, item in enumerate(items):
        if position and item.pause_before is not None:
            parts[-1] = _silence(item.pause_before, sample_rate)
        parts.append(level_clip(trim_silence(item.load(), sample_rate), sample_rate, options))
        parts.append(_silence(pauses.get(item.pause_after, 0.0), sample_rate))
    parts[-1] = _silence(options.tail, sample_rate)
    # Chapters lie on the MP4 chapter grid, so M4B chapter marks fall on exact samples.
    length = sum(len(part) for part in parts)
    audio = np.zeros(length + -length % grid_samples(sample_rate), dtype=np.float32)
    position = 0
    while parts:  # copy into one buffer, letting each part go: one copy of the chapter at most
        part = parts.pop(0)
        audio[position : position + len(part)] = part
        position += len(part)
    if options.master:
        audio = master(
            audio,
            sample_rate,
            rms_db=options.rms_db,
            # headroom for lossy encoders: AAC at 128 kbps overshot by 0.9 dB on the demo
            peak_db=options.peak_dbfs - 1.5,
            room_tone_db=options.room_tone_db,
            inplace=True,
        )
    return audio


def chapter_path(title: str | None, index: int) -> str:
    """The chapter's files without suffix, relative to the output folder."""
    return f"chapters/{_slug(title, index)}"


def write_chapter(
    items: Sequence[Placed],
    index: int,
    title: str | None,
    sample_rate: int,
    out_dir: Path,
    options: AssemblyOptions,
    *,
    formats: Sequence[str] = ("wav", "flac"),
) -> AssembledFile:
    """Assemble and master one chapter's winners and write its files (FLAC always, WAV when
    asked for; the WAV first, so a finished FLAC means both are written)."""
    audio = _chapter_audio(items, sample_rate, options)
    stem = chapter_path(title, index)
    wav = f"{stem}.wav" if "wav" in formats else None
    flac = f"{stem}.flac"
    # One conversion to 16-bit for every file: libsndfile scales float to PCM differently
    # for WAV and FLAC, which left a chapter's WAV one step off its FLAC in a fifth of samples.
    pcm = np.clip(np.rint(audio * np.float32(32768)), -32768, 32767).astype(np.int16)
    seconds = round(len(audio) / sample_rate, 3)
    del audio
    for path in (wav, flac):
        if path:
            write_audio_atomic(out_dir / path, pcm, sample_rate, subtype="PCM_16")
    return AssembledFile(index, title, wav, flac, seconds)


def write_book_files(
    chapters: Sequence[AssembledFile], out_dir: Path, *, formats: Sequence[str] = ("wav", "flac")
) -> AssembledFile:
    """The whole book's WAV/FLAC (as asked for), concatenated from the chapter FLACs in blocks."""
    book = {}
    for kind in ("wav", "flac"):
        if kind in formats and chapters:
            write_pcm(out_dir / f"book.{kind}", [out_dir / str(f.flac) for f in chapters])
            book[kind] = f"book.{kind}"
    seconds = round(sum(f.duration_s for f in chapters), 3)
    return AssembledFile(None, None, book.get("wav"), book.get("flac"), seconds)


def assemble_book(
    placed: Iterable[Placed],
    sample_rate: int,
    out_dir: Path,
    options: AssemblyOptions,
    *,
    formats: Sequence[str] = ("wav", "flac"),
) -> list[AssembledFile]:
    """Write one file per chapter and one for the book; returns chapters first, book last.

    Chapters are assembled and mastered one at a time and written to disk (always FLAC, the
    master that M4B and MP3 are encoded from; WAV when asked for); the book file is then
    concatenated from the chapter files in blocks, so no more than one chapter is in memory.
    """
    written = [
        write_chapter(items, index, title, sample_rate, out_dir, options, formats=formats)
        for index, title, items in _chapters(placed)
    ]
    return [*written, write_book_files(written, out_dir, formats=formats)]
