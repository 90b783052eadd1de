"""Deliverables with PyAV: an M4B (AAC in MP4) with chapters, tags and cover, and ACX MP3 files.

PyAV's wheel carries FFmpeg with the ``aac`` encoder, ``libmp3lame`` and MP4 chapter writing, so
no system ffmpeg is needed. Every writer reads its sources (the mastered chapter files) in
blocks of one second and feeds one resampler and one encoder, so a ten-hour book is never held
in memory. MP4 stores chapter times in milliseconds; chapters are therefore laid out on a grid
(:func:`grid_samples`) where a millisecond count is also a whole number of samples at both the
source and the delivery rate, so the chapter starts read back from the M4B equal the chapter
files' offsets to the sample. Frames carry timestamps in delivered samples, so the AAC encoder's
priming is dated before zero and the MP4 edit list skips it (LAME's own header does the same for
MP3): decoded, a delivered file starts where its master does. :func:`write_aac` writes one chapter
for a read-along EPUB. Files are written under a temporary name and renamed into place.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from verified_tts.options.output import FORMATS
from verified_tts.storage.atomic import atomic_path

__all__ = [
    "DELIVERY_RATE",
    "FORMATS",
    "BookTags",
    "ChapterSource",
    "grid_samples",
    "split_parts",
    "write_aac",
    "write_m4b",
    "write_mp3",
    "write_pcm",
]

DELIVERY_RATE = 44_100  # ACX and every audiobook store take 44.1 kHz
_BLOCK_S = 1.0


@dataclass(frozen=True)
class BookTags:
    """What a player shows: title, author, narrator, language, and the cover image's bytes."""

    title: str | None = None
    author: str | None = None
    narrator: str | None = None
    language: str | None = None
    cover: bytes | None = None


@dataclass(frozen=True)
class ChapterSource:
    """A mastered chapter file and its title."""

    title: str | None
    path: Path


def grid_samples(sample_rate: int, delivery_rate: int = DELIVERY_RATE) -> int:
    """Samples (at ``sample_rate``) of the shortest span that is a whole number of
    milliseconds and of samples at both rates: chapter lengths are padded to it."""
    # span = k / 1000 s must give integers k*sr/1000 and k*dr/1000: k = lcm of the two steps
    step = math.lcm(1000 // math.gcd(sample_rate, 1000), 1000 // math.gcd(delivery_rate, 1000))
    return step * sample_rate // 1000


def _blocks(paths: Sequence[Path]) -> Iterator[tuple[np.ndarray, int]]:
    for path in paths:
        with sf.SoundFile(path) as source:
            block = int(_BLOCK_S * source.samplerate)
            for chunk in source.blocks(blocksize=block, dtype="float32", always_2d=True):
                yield chunk.mean(axis=1).astype(np.float32), source.samplerate


def write_pcm(path: Path, sources: Sequence[Path], subtype: str = "PCM_16") -> int:
    """Concatenate audio files into one WAV or FLAC, block by block; returns its frames."""
    rate = sf.info(str(sources[0])).samplerate
    frames = 0
    with (
        atomic_path(path) as temporary,
        sf.SoundFile(
            temporary,
            "w",
            samplerate=rate,
            channels=1,
            subtype=subtype,
            format=path.suffix[1:].upper(),
        ) as sink,
    ):
        for source_path in sources:
            # 16-bit samples copied as they are: through float, libsndfile's WAV and FLAC
            # conversions differ and book.wav drifted one step from the chapter files.
            with sf.SoundFile(source_path) as source:
                if source.samplerate != rate:
                    raise ValueError(f"{path}: sources at {source.samplerate} and {rate} Hz")
                block = int(_BLOCK_S * rate)
                for chunk in source.blocks(blocksize=block, dtype="int16", always_2d=True):
                    mono = chunk[:, 0] if chunk.shape[1] == 1 else chunk.mean(axis=1)
                    sink.write(np.asarray(mono, dtype=np.int16))
                    frames += len(chunk)
    return frames


def _encode(container: Any, stream: Any, sources: Sequence[Path], delivery_rate: int) -> int:
    """Resample and encode every source into ``stream``; returns delivered samples."""
    import av

    resampler = None
    pts = 0
    delivered = 0
    step = Fraction(1, delivery_rate)

    def send(out: Any) -> None:
        # Timestamps in delivered samples let the encoder date its priming samples before 0,
        # so the MP4 muxer writes an edit list that skips them: without it a player heard
        # every chapter 1024 samples (23 ms) after its chapter mark.
        nonlocal delivered
        out.pts, out.time_base = delivered, step
        delivered += out.samples
        for packet in stream.encode(out):
            container.mux(packet)

    for chunk, rate in _blocks(sources):
        if resampler is None:
            resampler = av.AudioResampler(format="fltp", layout="mono", rate=delivery_rate)
        frame = av.AudioFrame.from_ndarray(chunk[None, :], format="fltp", layout="mono")
        frame.sample_rate = rate
        frame.pts = pts
        pts += len(chunk)
        for out in resampler.resample(frame):
            send(out)
    if resampler is not None:
        for out in resampler.resample(None):
            send(out)
    for packet in stream.encode(None):
        container.mux(packet)
    return delivered


def _cover_stream(container: Any, cover: bytes) -> Any:
    import av

    with av.open(io.BytesIO(cover)) as probe:
        image = probe.streams.video[0]
        codec, width, height = image.codec_context.name, image.width, image.height
    if codec not in ("mjpeg", "png"):
        return None  # MP4 cover art is JPEG or PNG
    stream = container.add_stream(codec)
    stream.width, stream.height = width, height
    stream.pix_fmt = "yuvj420p" if codec == "mjpeg" else "rgb24"
    stream.disposition = av.stream.Disposition.attached_pic
    return stream


def _tags(tags: BookTags, *, part: str | None = None) -> dict[str, str]:
    title = tags.title or "Untitled"
    values = {
        "title": f"{title} ({part})" if part else title,
        "album": title,
        "artist": tags.author,
        "album_artist": tags.author,
        "composer": tags.narrator,  # where Apple Books and most players show the narrator
        "genre": "Audiobook",
        "language": tags.language,
    }
    return {key: value for key, value in values.items() if value}


def write_m4b(
    path: Path,
    chapters: Sequence[ChapterSource],
    tags: BookTags,
    *,
    bitrate: int = 128_000,  # at 64 kbps AAC overshot the -3 dB peak by 1.6 dB on speech
    delivery_rate: int = DELIVERY_RATE,
    part: str | None = None,
) -> list[dict[str, Any]]:
    """Write an M4B of the chapter files, returning each chapter's title and start/end (ms and
    delivered samples). Every chapter file's length must lie on :func:`grid_samples`."""
    import av

    marks: list[dict[str, Any]] = []
    offset = 0  # in source samples
    for number, chapter in enumerate(chapters):
        info = sf.info(str(chapter.path))
        grid = grid_samples(info.samplerate, delivery_rate)
        if offset % grid or info.frames % grid:
            raise ValueError(f"{chapter.path} is not padded to the {grid}-sample chapter grid")
        start_ms, end_ms = (
            offset * 1000 // info.samplerate,
            (offset + info.frames) * 1000 // info.samplerate,
        )
        marks.append(
            {
                "id": number + 1,
                "title": chapter.title or f"Chapter {number + 1}",
                "start_ms": start_ms,
                "end_ms": end_ms,
                "start_sample": offset * delivery_rate // info.samplerate,
            }
        )
        offset += info.frames
    with atomic_path(path) as temporary:
        container = av.open(str(temporary), "w", format="mp4")
        try:
            stream = container.add_stream("aac", rate=delivery_rate, layout="mono")
            stream.bit_rate = bitrate
            cover = _cover_stream(container, tags.cover) if tags.cover else None
            container.metadata.update(_tags(tags, part=part))
            container.set_chapters(
                [
                    {
                        "id": mark["id"],
                        "start": mark["start_ms"],
                        "end": mark["end_ms"],
                        "time_base": Fraction(1, 1000),
                        "metadata": {"title": mark["title"]},
                    }
                    for mark in marks
                ]
            )
            if cover is not None:
                packet = av.Packet(tags.cover)
                packet.stream, packet.pts, packet.dts = cover, 0, 0
                container.mux(packet)
            _encode(container, stream, [c.path for c in chapters], delivery_rate)
        finally:
            container.close()
    return marks


def write_mp3(
    path: Path,
    source: Path,
    tags: BookTags,
    *,
    title: str | None = None,
    track: int | None = None,
    bitrate: int = 192_000,
    delivery_rate: int = DELIVERY_RATE,
) -> None:
    """One ACX MP3: constant 192 kbps, 44.1 kHz, mono, ID3 tags."""
    import av

    with atomic_path(path) as temporary:
        container = av.open(str(temporary), "w", format="mp3")
        try:
            stream = container.add_stream("libmp3lame", rate=delivery_rate, layout="mono")
            stream.bit_rate = bitrate  # a bit rate without a quality setting is CBR in LAME
            metadata = _tags(tags)
            metadata["title"] = title or metadata.get("title", "")
            if track is not None:
                metadata["track"] = str(track)
            container.metadata.update(metadata)
            _encode(container, stream, [source], delivery_rate)
        finally:
            container.close()


def write_aac(
    path: Path, source: Path, *, bitrate: int = 64_000, delivery_rate: int = DELIVERY_RATE
) -> None:
    """One chapter as AAC in MP4 (``audio/mp4``, an EPUB 3 core media type), untagged."""
    import av

    with atomic_path(path) as temporary:
        container = av.open(str(temporary), "w", format="mp4")
        try:
            stream = container.add_stream("aac", rate=delivery_rate, layout="mono")
            stream.bit_rate = bitrate
            _encode(container, stream, [source], delivery_rate)
        finally:
            container.close()


def split_parts(durations: Sequence[float], hours: float | None) -> list[list[int]]:
    """Chapter indices grouped into parts of at most ``hours`` (a longer chapter stands alone)."""
    if not durations:
        return []
    if not hours:
        return [list(range(len(durations)))]
    limit = hours * 3600
    parts: list[list[int]] = [[]]
    total = 0.0
    for index, seconds in enumerate(durations):
        if parts[-1] and total + seconds > limit:
            parts.append([])
            total = 0.0
        parts[-1].append(index)
        total += seconds
    return parts
