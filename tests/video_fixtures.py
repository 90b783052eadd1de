"""Short films made with PyAV for the dubbing tests: generated frames, tones and noise for sound.

The soundtrack is a background (two steady tones under low noise) and, when asked, a speech-like
"original dialogue" (a voiced buzz with syllable-rate bursts) during given intervals; the
background alone is also returned, as a music-and-effects stem would be.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np

RATE = 48_000
FPS = 10


def background(seconds: float, rate: int = RATE, channels: int = 2) -> np.ndarray:
    """Two tones (220 Hz left-leaning, 330 Hz right-leaning) and low noise, (frames, channels)."""
    t = np.arange(round(seconds * rate)) / rate
    rng = np.random.default_rng(7)
    left = 0.08 * np.sin(2 * np.pi * 220 * t) + 0.02 * rng.standard_normal(t.size)
    right = 0.08 * np.sin(2 * np.pi * 330 * t) + 0.02 * rng.standard_normal(t.size)
    bed = np.stack([left, right], axis=1) if channels == 2 else left[:, None]
    return bed.astype(np.float32)


def speech_like(seconds: float, intervals: Sequence[tuple[float, float]], rate: int = RATE):
    """A voiced buzz (140 Hz and harmonics) in 4 Hz syllable bursts, only inside ``intervals``."""
    t = np.arange(round(seconds * rate)) / rate
    voice = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 6))
    envelope = np.clip(np.sin(2 * np.pi * 4 * t), 0, None)
    gate = np.zeros_like(t)
    for start, end in intervals:
        gate[(t >= start) & (t < end)] = 1.0
    return (0.15 * voice * envelope * gate).astype(np.float32)


def make_film(
    path: Path,
    seconds: float,
    *,
    audio: np.ndarray | None = None,
    video_codec: str = "libx264",
    size: tuple[int, int] = (64, 48),
) -> Path:
    """A film of ``seconds`` of moving grey frames, with ``audio`` (frames, channels) as AAC."""
    import av

    with av.open(str(path), "w") as out:
        video = out.add_stream(video_codec, rate=FPS)
        video.width, video.height = size
        video.pix_fmt = "yuv420p"
        sound = None
        if audio is not None:
            sound = out.add_stream("aac", rate=RATE)
            sound.layout = "stereo" if audio.shape[1] == 2 else "mono"
        for index in range(round(seconds * FPS)):
            level = (index * 9) % 256
            image = np.full((size[1], size[0], 3), level, dtype=np.uint8)
            image[:, : (index % size[0]), 0] = 255 - level  # something moves: no two frames alike
            out.mux(video.encode(av.VideoFrame.from_ndarray(image, format="rgb24")))
        out.mux(video.encode(None))
        if sound is not None:
            planar = np.ascontiguousarray(audio.T)
            for start in range(0, planar.shape[1], 1024):
                frame = av.AudioFrame.from_ndarray(
                    np.ascontiguousarray(planar[:, start : start + 1024]),
                    format="fltp",
                    layout=sound.layout.name,
                )
                frame.rate, frame.pts, frame.time_base = RATE, start, Fraction(1, RATE)
                out.mux(sound.encode(frame))
            out.mux(sound.encode(None))
    return path


def video_packets(path: Path) -> list[tuple[int | None, int | None, bytes]]:
    """Every packet of the first video stream: (pts, dts, payload)."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return [(p.pts, p.dts, bytes(p)) for p in container.demux(stream) if p.size]
