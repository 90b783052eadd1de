"""Assembly: winners -> loudness-matched clips -> chapter files and the whole book, with pauses.

Each winner's leading and trailing silence is trimmed (so the pauses are ours, not the
generator's), its loudness brought to one target (ITU-R BS.1770 via pyloudnorm, with a peak
ceiling), and the clips are joined with pauses that grow from sentence to paragraph to chapter.
Chapter files and the book are written as WAV and FLAC at the generator's sample rate, each under
a temporary name and renamed into place. They are written as a stream, one clip at a time (a
winner's audio may be given as a loader that is called when its turn comes), so memory does not
grow with the length of the book.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verified_tts.config import AssemblyOptions
from verified_tts.output.atomic import atomic_path

__all__ = ["AssembledFile", "Placed", "assemble_book", "level_clip", "trim_silence"]

_SILENCE_DBFS = -45.0
_KEEP_EDGE_S = 0.05  # keep a breath of the clip's own edge so onsets are not clipped


@dataclass(frozen=True)
class Placed:
    """A winner ready for assembly: its audio, chapter and the pause that follows it."""

    audio: np.ndarray | Callable[[], np.ndarray]  # the clip, or a loader called at its turn
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


class _Sink:
    """A WAV and a FLAC written side by side, block by block, each renamed into place when the
    sink closes (a failure removes both temporary files)."""

    def __init__(self, stack: ExitStack, out_dir: Path, stem: str, sample_rate: int) -> None:
        import soundfile as sf

        self.wav, self.flac, self.frames = f"{stem}.wav", f"{stem}.flac", 0
        self.files = []
        for name in (self.wav, self.flac):
            temporary = stack.enter_context(atomic_path(out_dir / name))
            handle = sf.SoundFile(
                temporary,
                "w",
                samplerate=sample_rate,
                channels=1,
                subtype="PCM_16",
                format=name.rsplit(".", 1)[1].upper(),
            )
            stack.callback(handle.close)  # closed before its atomic_path renames it
            self.files.append(handle)

    def write(self, audio: np.ndarray) -> None:
        # One conversion to 16-bit for both files: libsndfile scales float to PCM differently for
        # WAV and FLAC, which left the "lossless" FLAC one step off the WAV in a third of samples.
        pcm = np.clip(np.rint(np.asarray(audio, dtype=np.float32) * 32768), -32768, 32767)
        pcm = pcm.astype(np.int16)
        for handle in self.files:
            handle.write(pcm)
        self.frames += len(pcm)


@contextmanager
def _sink(out_dir: Path, stem: str, sample_rate: int) -> Iterator[_Sink]:
    with ExitStack() as stack:
        yield _Sink(stack, out_dir, stem, sample_rate)


def _clip(item: Placed) -> np.ndarray:
    return item.audio() if callable(item.audio) else item.audio


def assemble_book(
    placed: Sequence[Placed], sample_rate: int, out_dir: Path, options: AssemblyOptions
) -> list[AssembledFile]:
    """Write one file per chapter and one for the book; returns chapters first, book last.

    A chapter file is its lead-in, its clips with the pauses after them, and the tail; the book
    is the chapters' lead-ins and clips with a chapter pause between chapters, and the tail."""
    pauses = {
        "sentence": options.sentence_pause,
        "paragraph": options.paragraph_pause,
        "chapter": options.chapter_pause,
        "end": 0.0,
    }
    order = sorted(range(len(placed)), key=lambda i: placed[i].chapter)  # stable: book order
    chapters: dict[int, list[Placed]] = {}
    for i in order:
        chapters.setdefault(placed[i].chapter, []).append(placed[i])
    written = []
    with _sink(out_dir, "book", sample_rate) as book:
        for position, (index, items) in enumerate(chapters.items()):
            title = items[-1].chapter_title
            if position:
                book.write(_silence(options.chapter_pause, sample_rate))
            with _sink(out_dir, f"chapters/{_slug(title, index)}", sample_rate) as chapter:
                lead_in = _silence(options.lead_in, sample_rate)
                chapter.write(lead_in)
                book.write(lead_in)
                for item in items:
                    clip = level_clip(trim_silence(_clip(item), sample_rate), sample_rate, options)
                    chapter.write(clip)
                    book.write(clip)
                    if item.pause_after not in ("chapter", "end"):
                        pause = _silence(pauses[item.pause_after], sample_rate)
                        chapter.write(pause)
                        book.write(pause)
                chapter.write(_silence(options.tail, sample_rate))
            written.append(
                AssembledFile(
                    index, title, chapter.wav, chapter.flac, round(chapter.frames / sample_rate, 3)
                )
            )
        book.write(_silence(options.tail, sample_rate))
    written.append(
        AssembledFile(None, None, book.wav, book.flac, round(book.frames / sample_rate, 3))
    )
    return written
