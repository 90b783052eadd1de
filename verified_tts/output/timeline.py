"""A long mono track held as its pieces: the dub's lines at their places, silence everywhere else.

A film's dub is mostly silence: a two-hour track at 48 kHz is 1.4 GB of float32, while its lines
are a small part of that. :class:`Timeline` keeps only the lines (each a start sample and its
audio) and the length, and renders any span on demand (lines that run over each other are added),
so the mix and the files are made a block at a time in memory that does not grow with the film.
:func:`write_blocks_atomic` writes a WAV or FLAC from such blocks, atomically.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from verified_tts.storage.atomic import atomic_path

__all__ = ["Timeline", "write_blocks_atomic"]

BLOCK_S = 10.0  # how much of a track is rendered at once


@dataclass(frozen=True)
class Timeline:
    """``frames`` samples at ``sample_rate``; ``pieces`` are (first sample, mono float32 audio)
    in order of their first sample."""

    sample_rate: int
    frames: int
    pieces: tuple[tuple[int, np.ndarray], ...] = ()
    _starts: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _reach: int = field(init=False, repr=False, compare=False)  # the longest piece

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.pieces, key=lambda piece: piece[0]))
        object.__setattr__(self, "pieces", ordered)
        object.__setattr__(self, "_starts", tuple(first for first, _ in ordered))
        object.__setattr__(self, "_reach", max((a.size for _, a in ordered), default=0))

    @property
    def size(self) -> int:
        return self.frames

    @property
    def seconds(self) -> float:
        return self.frames / self.sample_rate

    def span(self, first: int, last: int) -> np.ndarray:
        """Samples ``first`` to ``last``, every piece in them added (silence past the track's
        end, so a mix longer than the dub gets blocks of the length it asks for)."""
        out = np.zeros(max(0, last - first), dtype=np.float32)
        low = bisect.bisect_left(self._starts, first - self._reach)
        high = bisect.bisect_left(self._starts, last)
        for start, audio in self.pieces[low:high]:
            a, b = max(first, start), min(last, start + audio.size)
            if b > a:
                out[a - first : b - first] += audio[a - start : b - start]
        return out

    def blocks(self, step: int | None = None) -> Iterator[np.ndarray]:
        """The whole track, ``step`` samples at a time (default :data:`BLOCK_S`)."""
        step = step or round(BLOCK_S * self.sample_rate)
        for first in range(0, self.frames, step):
            yield self.span(first, min(self.frames, first + step))

    def at_rate(self, rate: int) -> Timeline:
        """The same track at ``rate``: each piece resampled on its own, placed at its time."""
        from verified_tts.audio import resample

        if rate == self.sample_rate:
            return self
        scale = rate / self.sample_rate
        return Timeline(
            rate,
            round(self.frames * scale),
            tuple(
                (round(first * scale), resample(a, self.sample_rate, rate))
                for first, a in self.pieces
            ),  # fmt: skip
        )

    def to_array(self) -> np.ndarray:
        """The whole track in memory (short tracks and tests only)."""
        return self.span(0, self.frames)


def write_blocks_atomic(
    path: str | os.PathLike[str],
    blocks: Iterable[np.ndarray],
    sample_rate: int,
    channels: int,
    subtype: str,
) -> None:
    """A WAV or FLAC (by suffix) written from ``blocks`` (frames or (frames, channels))."""
    import soundfile as sf

    with (
        atomic_path(path) as temporary,
        sf.SoundFile(
            temporary, "w", samplerate=sample_rate, channels=channels, subtype=subtype
        ) as out,
    ):
        for block in blocks:
            out.write(block)
