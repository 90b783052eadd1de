"""Assembly: winners -> loudness-matched clips -> chapter files and the whole book, with pauses.

Each winner's leading and trailing silence is trimmed (so the pauses are ours, not the
generator's), its loudness brought to one target (ITU-R BS.1770 via pyloudnorm, with a peak
ceiling), and the clips are joined with pauses that grow from sentence to paragraph, with room
tone at each chapter's head and tail. A winner spoken at another rate than the book's (voices of
different generators: Piper at 22,050 Hz, hibari at 24,000 Hz) is resampled once, here, with a
polyphase filter, before anything else touches it. Each chapter is then mastered to ACX levels
(:mod:`verified_tts.output.acx`) and written at the book's sample rate, one chapter at a time,
each file under a temporary name and renamed into place; the book file is concatenated from the
chapter files in blocks. Where every winner lies in its chapter file is kept to the sample
(:class:`PlacedClip`), so sentence timings (captions, read-along overlays, ``timings.json``) are
exact.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from verified_tts.audio import resample
from verified_tts.cores import usable_cores
from verified_tts.options import AssemblyOptions
from verified_tts.output.acx import master
from verified_tts.output.encode import grid_samples, write_pcm
from verified_tts.storage.atomic import write_audio_atomic

if TYPE_CHECKING:
    from verified_tts.text.book import Segment

__all__ = [
    "AssembledFile",
    "Placed",
    "PlacedClip",
    "assemble_book",
    "chapter_path",
    "level_clip",
    "resample",
    "trim_silence",
    "voiced_bounds",
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
    sample_rate: int | None = None  # the clip's own rate; None: the book's
    # what the clip says and which candidate it is (for timings; absent in synthetic uses)
    segment: Segment | None = field(default=None, repr=False)
    key: str | None = None  # the winner candidate's key
    info: Mapping[str, Any] = field(default_factory=dict, repr=False)  # the generator's info

    def load(self) -> np.ndarray:
        return self.audio() if callable(self.audio) else self.audio

    def load_at(self, sample_rate: int) -> np.ndarray:
        """The clip at ``sample_rate``, resampled when it was spoken at another rate."""
        return resample(self.load(), self.sample_rate or sample_rate, sample_rate)


@dataclass(frozen=True)
class PlacedClip:
    """Where a winner lies in its chapter file: samples ``[start, end)`` at the chapter's rate,
    after ``trimmed`` samples of its own leading silence were cut."""

    start: int
    end: int
    trimmed: int
    item: Placed


@dataclass(frozen=True)
class AssembledFile:
    index: int | None  # chapter index, None for the whole book
    title: str | None
    wav: str | None  # paths relative to the output folder (None: format not asked for)
    flac: str | None
    duration_s: float
    clips: tuple[PlacedClip, ...] = field(default=(), repr=False)  # a chapter's winners, in order
    sample_rate: int | None = None


def voiced_bounds(audio: np.ndarray, sample_rate: int) -> tuple[int, int]:
    """The samples ``[start, end)`` that :func:`trim_silence` keeps."""
    frame = max(1, sample_rate // 100)
    count = len(audio) // frame
    if audio.size == 0 or count == 0:
        return 0, len(audio)
    frames = audio[: count * frame].reshape(count, frame)
    level = 20 * np.log10(np.sqrt(np.mean(frames**2, axis=1)) + 1e-10)
    voiced = np.flatnonzero(level > _SILENCE_DBFS)
    if voiced.size == 0:
        return 0, len(audio)
    keep = int(_KEEP_EDGE_S * sample_rate)
    return max(0, voiced[0] * frame - keep), min(len(audio), (voiced[-1] + 1) * frame + keep)


def trim_silence(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Cut leading and trailing silence below -45 dBFS, keeping 50 ms at each edge."""
    start, end = voiced_bounds(audio, sample_rate)
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
) -> tuple[np.ndarray, tuple[PlacedClip, ...]]:
    pauses = {
        "sentence": options.sentence_pause,
        "paragraph": options.paragraph_pause,
        "chapter": 0.0,
        "end": 0.0,
    }
    parts = [_silence(options.lead_in, sample_rate)]
    trims = []
    for position, item in enumerate(items):
        if position and item.pause_before is not None:
            parts[-1] = _silence(item.pause_before, sample_rate)
        raw = item.load_at(sample_rate)
        start, end = voiced_bounds(raw, sample_rate)
        trims.append(start)
        parts.append(level_clip(raw[start:end], sample_rate, options))
        parts.append(_silence(pauses.get(item.pause_after, 0.0), sample_rate))
    parts[-1] = _silence(options.tail, sample_rate)
    # Chapters lie on the MP4 chapter grid, so M4B chapter marks fall on exact samples.
    length = sum(len(part) for part in parts)
    audio = np.zeros(length + -length % grid_samples(sample_rate), dtype=np.float32)
    clips = []
    position = 0
    for number in range(len(parts)):  # one buffer, each part let go: one copy of the chapter
        part, parts[number] = parts[number], parts[number][:0]
        audio[position : position + len(part)] = part
        if number % 2:  # parts alternate: silence, clip, silence, clip, ..., silence
            item = items[number // 2]
            clips.append(PlacedClip(position, position + len(part), trims[number // 2], item))
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
    return audio, tuple(clips)


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
    audio, clips = _chapter_audio(items, sample_rate, options)
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
    return AssembledFile(index, title, wav, flac, seconds, clips, sample_rate)


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
    rate = next((f.sample_rate for f in chapters if f.sample_rate), None)
    return AssembledFile(None, None, book.get("wav"), book.get("flac"), seconds, (), rate)


def assemble_book(
    placed: Iterable[Placed],
    sample_rate: int,
    out_dir: Path,
    options: AssemblyOptions,
    *,
    formats: Sequence[str] = ("wav", "flac"),
) -> list[AssembledFile]:
    """Write one file per chapter and one for the book; returns chapters first, book last.

    Chapters are assembled and mastered one per core at a time (the filters and encoders
    release the GIL, so the cores a render used are not left idle at its end) and written to
    disk (always FLAC, the master that M4B and MP3 are encoded from; WAV when asked for); the
    book file is then concatenated from the chapter files in blocks, so no more than one chapter
    per core is in memory.
    """

    def write(chapter: tuple[int, str | None, Sequence[Placed]]) -> AssembledFile:
        index, title, items = chapter
        return write_chapter(items, index, title, sample_rate, out_dir, options, formats=formats)

    with ThreadPoolExecutor(usable_cores(), thread_name_prefix="chapter") as pool:
        written = list(pool.map(write, _chapters(placed)))
    return [*written, write_book_files(written, out_dir, formats=formats)]
