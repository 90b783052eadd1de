"""What a dub is mixed over, checked before any line is voiced and then read a block at a time.

:func:`read_bed` finds the bed (a music-and-effects stem, the film's own audio, an original
soundtrack, or nothing) and checks everything about it that could fail late, before the synthesis
starts: that the file is there and readable, its layout (mono, stereo, 5.1 or 7.1; a stem of
another layout than the film's is matched when that is trivial, a mono stem, else refused naming
both layouts), and that a stem lasts as long as the film. Nothing is decoded then but a first
block. :meth:`Bed.blocks` later streams the bed as float32 (frames, channels) blocks of a fixed
size, padded with silence or cut to the length asked, so a feature film's soundtrack is never in
memory whole (it is decoded again for every pass of the mix).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verified_tts.errors import UserError
from verified_tts.output.channels import check_layout, match_stem
from verified_tts.output.video import VideoInfo, decode_audio_blocks

__all__ = ["Bed", "read_bed"]

# a stem may end this much before the film (encoder padding, a last frame) and still be whole
_STEM_SLACK_S = 0.1


@dataclass(frozen=True)
class Bed:
    """What the dub is mixed over: ``kind`` is background, original or none; ``path`` the file
    it is read from (a film's first audio track, or a WAV/FLAC), ``adapt`` what makes a block of
    it the output's layout."""

    kind: str
    source: str | None  # the file it came from, as given
    path: Path | None = None
    film: bool = False  # the audio of a film (decoded with PyAV), else a soundfile file
    sample_rate: int | None = None
    channels: int | None = None  # the output's layout: the film's, else the stem's
    adapt: Callable[[np.ndarray], np.ndarray] | None = None
    seconds: float | None = None  # how long it lasts, as its file says

    def blocks(self, step: int, frames: int) -> Iterator[np.ndarray]:
        """``frames`` frames of the bed in blocks of ``step`` (the last may be shorter)."""
        assert self.path is not None and self.channels is not None
        adapt = self.adapt or (lambda block: block)
        raw = _film_blocks(self.path) if self.film else _file_blocks(self.path, step)
        return _fixed(map(adapt, raw), step, frames, self.channels)


def _file_blocks(path: Path, step: int) -> Iterator[np.ndarray]:
    import soundfile as sf

    yield from sf.blocks(str(path), blocksize=step, dtype="float32", always_2d=True)


def _film_blocks(path: Path) -> Iterator[np.ndarray]:
    yield from decode_audio_blocks(path)


def _fixed(
    blocks: Iterator[np.ndarray], step: int, frames: int, channels: int
) -> Iterator[np.ndarray]:
    """Blocks of exactly ``step`` frames (the last one shorter) for ``frames`` in all: the
    source's blocks cut and joined, silence where it ends early, cut where it runs longer."""
    buffer = np.zeros((step, channels), dtype=np.float32)
    filled = 0
    sent = 0
    for block in blocks:
        offset = 0
        while offset < block.shape[0] and sent < frames:
            want = min(step - filled, frames - sent - filled)
            take = min(want, block.shape[0] - offset)
            buffer[filled : filled + take] = block[offset : offset + take]
            filled += take
            offset += take
            if filled == step or sent + filled == frames:
                yield buffer[:filled].copy()
                sent += filled
                filled = 0
        if sent >= frames:
            return
    while sent < frames:
        size = min(step, frames - sent)
        buffer[filled:size] = 0.0
        yield buffer[:size].copy()
        sent += size
        filled = 0


def _audio_file_info(path: Path, option: str) -> tuple[int, int, float]:
    """(rate, channels, seconds) of a WAV or FLAC, with its first block read as a check."""
    import soundfile as sf

    if not path.is_file():
        raise UserError(f"{option} {path} does not exist or is not a file: give a WAV or FLAC")
    try:
        info = sf.info(str(path))
        with sf.SoundFile(str(path)) as handle:
            handle.read(1024, dtype="float32")
    except (RuntimeError, OSError) as error:  # soundfile's LibsndfileError is a RuntimeError
        raise UserError(
            f"{option} {path} is not an audio file soundfile can read ({error}); give a WAV or FLAC"
        ) from None
    return int(info.samplerate), int(info.channels), info.frames / info.samplerate


def read_bed(
    video: VideoInfo | None,
    background: str | os.PathLike | None,
    mix: str | os.PathLike | None,
) -> tuple[Bed, list[str]]:
    """The bed and any warning about it: a ``--background`` stem first (it must last as long as
    the film), else the film's own audio, else ``--mix``; a film without audio and without a stem
    gets the dub alone, and says so."""
    if background is not None and mix is not None:
        raise UserError(
            "--background and --mix are two beds: give the music-and-effects stem (--background) "
            "or the original mix (--mix), not both"
        )
    if background is not None:
        path = Path(background)
        rate, channels, seconds = _audio_file_info(path, "--background")
        if video is not None and seconds + _STEM_SLACK_S < video.duration_s:
            raise UserError(
                f"--background {background} lasts {seconds:.2f} s but {video.path.name} lasts "
                f"{video.duration_s:.2f} s: give the stem of the whole film"
            )
        layout, adapt = channels, None
        if video is not None and video.audio_channels:
            adapt = match_stem(channels, video.audio_channels, str(background), video.path.name)
            layout = video.audio_channels
        check_layout(channels, f"--background {background}")
        return Bed("background", str(background), path, False, rate, layout, adapt, seconds), []
    if video is not None:
        if mix is not None:
            raise UserError(
                "--mix and --video both give the original audio: leave out --mix (the film's "
                "own audio is used) or give --background for a music-and-effects stem"
            )
        if not video.has_audio:
            warning = (
                f"{video.path.name} has no audio track: the dub plays alone (give --background "
                "me.wav to mix it over music and effects)"
            )
            return Bed("none", None), [warning]
        channels = int(video.audio_channels or 0)
        bed = Bed("original", str(video.path), video.path, True, video.audio_rate, channels,
                  seconds=video.duration_s)  # fmt: skip
        return bed, []
    if mix is not None:
        path = Path(mix)
        rate, channels, seconds = _audio_file_info(path, "--mix")
        check_layout(channels, f"--mix {mix}")
        return Bed("original", str(mix), path, False, rate, channels, seconds=seconds), []
    return Bed("none", None), []
