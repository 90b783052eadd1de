"""Generated films for the dubbing tests and benchmarks, and what they measure of a dubbed one.

:func:`make_film` writes a film of any length with PyAV, a second at a time (a two-hour film is
never in memory): small moving frames at a low frame rate and an AAC soundtrack in any layout of
:mod:`verified_tts.output.channels` from :func:`soundtrack`: on every channel its own tone and
noise (independent, so the channels do not correlate), a low tone on the LFE, and a speech-like
buzz as the original dialogue in the centre (both channels in stereo) during given intervals.
:func:`decoded` reads a film's audio track back; :func:`reference_lufs` measures it with
``pyloudnorm``, the independent meter (five channels at most: the LFE is left out, and in 7.1 the
side and back surrounds of a side are summed into one, exact for uncorrelated channels);
:func:`channel_rise_db` says how much louder each channel is during the cues than between them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np

from verified_tts.output.channels import LAYOUTS

__all__ = [
    "channel_rise_db",
    "decoded",
    "make_film",
    "packets",
    "reference_lufs",
    "soundtrack",
    "streams",
    "video_packets",
]

RATE = 48_000


def soundtrack(
    channels: int, dialogue: Sequence[tuple[float, float]] = ()
) -> Callable[[int, int], np.ndarray]:
    """``audio(first, last)``: samples ``first`` to ``last`` of the soundtrack (see the module
    docstring), (frames, channels) float32, the same whichever way it is cut."""

    def audio(first: int, last: int) -> np.ndarray:
        t = np.arange(first, last) / RATE
        out = np.empty((t.size, channels), dtype=np.float32)
        for channel in range(channels):
            rng = np.random.default_rng([channel, first])
            tone = 0.05 * np.sin(2 * np.pi * (180 + 55 * channel) * t)
            out[:, channel] = tone + 0.02 * rng.standard_normal(t.size)
        if channels in (6, 8):
            out[:, 3] = 0.1 * np.sin(2 * np.pi * 50 * t)  # the LFE: low, and not counted
        voice = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 6))
        gate = np.zeros(t.size)
        for start, end in dialogue:
            gate[(t >= start) & (t < end)] = 1.0
        speech = 0.12 * voice * np.clip(np.sin(2 * np.pi * 4 * t), 0, None) * gate
        targets = [2] if channels in (6, 8) else list(range(min(channels, 2)))
        for channel in targets:
            out[:, channel] += speech.astype(np.float32)
        return out

    return audio


def make_film(
    path: Path,
    seconds: float,
    channels: int,
    *,
    dialogue: Sequence[tuple[float, float]] = (),
    fps: int = 10,
    size: tuple[int, int] = (32, 24),
    language: str | None = "eng",
) -> Path:
    """A film of ``seconds`` with an AAC soundtrack in ``channels`` (tagged ``language``),
    written a second at a time, video and audio interleaved."""
    import av

    audio = soundtrack(channels, dialogue)
    layout = LAYOUTS[channels]
    with av.open(str(path), "w") as out:
        video = out.add_stream("libx264", rate=fps)
        video.width, video.height = size
        video.pix_fmt = "yuv420p"
        sound = out.add_stream("aac", rate=RATE)
        sound.layout = layout
        if language:
            sound.metadata["language"] = language
        frames, position = round(seconds * fps), 0
        total = round(seconds * RATE)
        for second in range(int(np.ceil(seconds))):
            for index in range(second * fps, min(frames, (second + 1) * fps)):
                level = (index * 9) % 256
                image = np.full((size[1], size[0], 3), level, dtype=np.uint8)
                image[:, : index % size[0], 0] = 255 - level  # no two frames alike
                out.mux(video.encode(av.VideoFrame.from_ndarray(image, format="rgb24")))
            stop = min(total, (second + 1) * RATE)
            block = audio(position, stop)
            for start in range(0, block.shape[0], 1024):
                piece = np.ascontiguousarray(block[start : start + 1024]).reshape(1, -1)
                frame = av.AudioFrame.from_ndarray(piece, format="flt", layout=layout)
                frame.rate, frame.pts = RATE, position + start
                frame.time_base = Fraction(1, RATE)
                out.mux(sound.encode(frame))
            position = stop
        out.mux(video.encode(None))
        out.mux(sound.encode(None))
    return path


def decoded(path: Path, index: int = 0) -> tuple[np.ndarray, int]:
    """Audio track ``index`` of a film decoded to (frames, channels) float32, and its rate."""
    import av

    from verified_tts.output.video import decode_audio_blocks

    with av.open(str(path)) as container:
        rate = container.streams.audio[index].codec_context.sample_rate
    return np.concatenate(list(decode_audio_blocks(path, index))), int(rate)


def streams(path: Path) -> list[dict]:
    """What a player reads of each stream: type, codec, layout, language, default, seconds."""
    import av

    with av.open(str(path)) as container:
        found = []
        for s in container.streams:
            seconds = float(s.duration * s.time_base) if s.duration else None
            found.append({
                "type": s.type,
                "codec": s.codec_context.name,
                "layout": s.codec_context.layout.name if s.type == "audio" else None,
                "language": s.metadata.get("language"),
                "default": bool(int(s.disposition) & 1),
                "seconds": seconds,
            })  # fmt: skip
        return found


def packets(path: Path, kind: str, index: int = 0) -> list[tuple[int | None, bytes]]:
    """Every packet of a film's ``index``-th stream of ``kind``: (pts, payload)."""
    import av

    with av.open(str(path)) as container:
        stream = getattr(container.streams, kind)[index]
        return [(p.pts, bytes(p)) for p in container.demux(stream) if p.size]


def video_packets(path: Path) -> list[tuple[int | None, bytes]]:
    return packets(path, "video")


def reference_lufs(audio: np.ndarray, rate: int) -> float:
    """Integrated loudness by ``pyloudnorm`` (see the module docstring for 5.1 and 7.1)."""
    import pyloudnorm

    channels = audio.shape[1]
    if channels == 6:
        audio = audio[:, [0, 1, 2, 4, 5]]
    elif channels == 8:  # L R C Lb Rb Ls Rs: each side's back and side surround as one
        audio = np.stack(
            [audio[:, 0], audio[:, 1], audio[:, 2], audio[:, 4] + audio[:, 6],
             audio[:, 5] + audio[:, 7]], axis=1,
        )  # fmt: skip
    return float(pyloudnorm.Meter(rate).integrated_loudness(audio.astype(np.float64)))


def channel_rise_db(
    audio: np.ndarray,
    rate: int,
    during: Sequence[tuple[float, float]],
    between: Sequence[tuple[float, float]],
) -> np.ndarray:
    """Per channel: mean power during ``during`` over mean power during ``between``, in dB."""

    def power(spans: Sequence[tuple[float, float]]) -> np.ndarray:
        parts = [audio[round(a * rate) : round(b * rate)] for a, b in spans]
        return np.mean(np.square(np.concatenate(parts).astype(np.float64)), axis=0)

    return 10 * np.log10(power(during) / power(between))
