"""The dub delivered into its video: the picture copied, the mix as a new language track, subtitles.

:func:`probe_video` reads what a film holds (with one-line errors for what is not a video, or
whose first audio track has a layout a dub cannot mix into or does not decode),
:func:`decode_audio_blocks` streams its first audio track (the original mix a dub is ducked over,
in any layout of :mod:`~verified_tts.output.channels`), and :func:`mux_dub` writes
``film.dub.mp4`` (or ``.mkv`` when the input is Matroska/WebM or holds a stream MP4 cannot
carry): every video stream's packets copied as they are (never re-encoded), the mixed dub (pulled
a block at a time, in the film's layout) as a new AAC track tagged with its language and marked
default, the original audio tracks kept after it with their own language tags, and the subtitles
of what was actually spoken as a text track (``mov_text``
in MP4, ``srt`` in Matroska) in the dub's language. PyAV's wheel bundles the FFmpeg that does all
of it.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.errors import UserError
from verified_tts.output.channels import LAYOUTS, check_layout
from verified_tts.storage.atomic import atomic_path

__all__ = [
    "VideoInfo",
    "language_code",
    "mux_dub",
    "output_path",
    "probe_video",
    "decode_audio_blocks",
]

# MP4 (ISO BMFF) takes these video codecs as they are; anything else goes into Matroska
_MP4_VIDEO = {"h264", "hevc", "mpeg4", "av1", "vp9", "mjpeg", "prores"}
_MATROSKA = {".mkv", ".webm", ".mka"}
# the smallest ASS header the mov_text encoder accepts (it keeps only text and timing)
_ASS_HEADER = (
    b"[Script Info]\nScriptType: v4.00+\nPlayResX: 384\nPlayResY: 288\n\n[V4+ Styles]\n"
    b"Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, "
    b"BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, "
    b"BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding\n"
    b"Style: Default,Arial,16,&Hffffff,&Hffffff,&H0,&H0,0,0,0,0,100,100,0,0,1,1,0,2,10,10,10,0"
    b"\n\n[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, "
    b"Text\n"
)
_MS = Fraction(1, 1000)


@dataclass(frozen=True)
class VideoInfo:
    """What a film holds, as far as a dub needs it."""

    path: Path
    duration_s: float
    video_codecs: tuple[str, ...]
    audio_tracks: int
    audio_rate: int | None  # of the first audio track
    audio_channels: int | None
    matroska: bool  # the output must be .mkv
    audio_codec: str | None = None  # of the first audio track
    audio_languages: tuple[str | None, ...] = ()  # each audio track's language tag, if any

    @property
    def has_audio(self) -> bool:
        return self.audio_tracks > 0


def language_code(tag: str, *, matroska: bool = False, option: str = "--language") -> str:
    """A language tag (``es``, ``spa``, ``pt-BR``) as the three-letter code containers use:
    ISO 639-2/T for MP4, the bibliographic form for Matroska."""
    import langcodes

    try:
        language = langcodes.Language.get(tag)
        return language.to_alpha3(variant="B" if matroska else "T")
    except (ValueError, LookupError):
        raise UserError(
            f"{option} {tag!r} is not a language code: give one such as es, spa or pt-BR"
        ) from None


def probe_video(path: str | os.PathLike) -> VideoInfo:
    """Open ``path`` and say what it holds; anything but a readable video is one line, and so is
    a first audio track whose layout a dub cannot mix into or whose first packets do not decode
    (checked now, before any line is voiced)."""
    import av

    path = Path(path)
    if not path.is_file():
        raise UserError(f"--video {path} does not exist or is not a file: give the film to dub")
    try:
        with av.open(str(path)) as container:
            videos = [s for s in container.streams.video]
            audios = [s for s in container.streams.audio]
            if not videos:
                raise UserError(
                    f"--video {path} has no video stream: for audio only, use --mix or "
                    "--background instead"
                )
            duration = (
                float(container.duration / av.time_base) if container.duration else None
            ) or max((float(s.duration * s.time_base) for s in videos if s.duration), default=0)
            if not duration or duration <= 0:
                raise UserError(
                    f"--video {path} does not say how long it is: remux it (ffmpeg -i FILM "
                    "-c copy film.mp4) so its length is known"
                )
            codecs = tuple(s.codec_context.name for s in videos)
            first = audios[0] if audios else None
            if first is not None:
                track = f"--video {path}'s first audio track"
                check_layout(int(first.codec_context.channels), track)
                _check_decodes(container, first, path)
            return VideoInfo(
                path=path,
                duration_s=duration,
                video_codecs=codecs,
                audio_tracks=len(audios),
                audio_rate=int(first.codec_context.sample_rate) if first else None,
                audio_channels=int(first.codec_context.channels) if first else None,
                matroska=path.suffix.lower() in _MATROSKA
                or any(c not in _MP4_VIDEO for c in codecs),
                audio_codec=first.codec_context.name if first else None,
                audio_languages=tuple(s.metadata.get("language") for s in audios),
            )
    except (av.error.FFmpegError, ValueError) as error:
        raise UserError(f"--video {path} cannot be read as a video ({error})") from None


def _check_decodes(container: Any, stream: Any, path: Path) -> None:
    """The first audio frames decode (a codec FFmpeg cannot decode, or broken packets, fail
    here rather than after the synthesis)."""
    import av

    try:
        for packet in container.demux(stream):
            if packet.size and packet.decode():
                return
    except av.error.FFmpegError as error:
        raise UserError(
            f"--video {path}: its audio ({stream.codec_context.name}) does not decode ({error}); "
            "re-encode the audio (ffmpeg -i FILM -c:v copy -c:a aac film.mp4)"
        ) from None
    raise UserError(f"--video {path}: its audio track holds no sound; remux it without it")


def output_path(out_dir: Path, info: VideoInfo) -> Path:
    """``film.dub.mp4``, or ``film.dub.mkv`` for inputs MP4 cannot carry."""
    return out_dir / f"{info.path.stem}.dub.{'mkv' if info.matroska else 'mp4'}"


def decode_audio_blocks(path: Path, index: int = 0) -> Iterator[np.ndarray]:
    """Audio track ``index`` (the first) decoded as float32 (frames, channels) blocks at its
    own rate.

    Decoded to packed samples: PyAV's planar frames miscount their planes at eight channels."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.audio[index]
        channels = stream.codec_context.channels
        resampler = av.AudioResampler(format="flt", layout=stream.codec_context.layout,
                                      rate=stream.codec_context.sample_rate)  # fmt: skip
        for frame in container.decode(stream):
            for converted in resampler.resample(frame):
                yield converted.to_ndarray().reshape(-1, channels)
        for converted in resampler.resample(None):
            yield converted.to_ndarray().reshape(-1, channels)


def _audio_packets(
    stream: Any, blocks: Iterable[np.ndarray], rate: int, channels: int
) -> Iterator[Any]:
    """The mix's blocks encoded as packets in time order (packed frames of 1024 samples)."""
    import av

    layout = LAYOUTS[channels]
    position = 0
    for block in blocks:
        block = np.asarray(block, dtype=np.float32).reshape(-1, channels)
        for start in range(0, block.shape[0], 1024):
            piece = np.ascontiguousarray(block[start : start + 1024]).reshape(1, -1)
            frame = av.AudioFrame.from_ndarray(piece, format="flt", layout=layout)
            frame.rate, frame.pts, frame.time_base = rate, position, Fraction(1, rate)
            position += piece.size // channels
            yield from stream.encode(frame)
    yield from stream.encode(None)


def _subtitle_packets(stream, lines: Sequence[tuple[float, float, str]]) -> Iterator[Any]:
    from av.subtitles.subtitle import SubtitleSet

    for start, end, words in sorted(lines):
        duration = max(1, round((end - start) * 1000))
        event = f"0,0,Default,,0,0,0,,{' '.join(words.split())}".encode()
        packet = stream.codec_context.encode_subtitle(
            SubtitleSet.create(event, 0, duration, pts=round(start * 1_000_000))
        )
        packet.stream = stream
        packet.time_base = _MS
        packet.pts = packet.dts = round(start * 1000)
        packet.duration = duration
        yield packet


def _seconds(packet: Any) -> float:
    return float(packet.pts * packet.time_base) if packet.pts is not None else 0.0


def mux_dub(
    info: VideoInfo,
    destination: Path,
    mix: Iterable[np.ndarray],
    rate: int,
    channels: int,
    language: str,
    subtitles: Sequence[tuple[float, float, str]],
    *,
    title: str = "Dub",
    original_language: str | None = None,
) -> Path:
    """Write the dubbed film (atomically): see the module docstring. ``mix`` is the dub track's
    blocks (frames, channels), pulled as the muxer needs them; ``subtitles`` are the (start,
    end, text) of every placed line; the original tracks keep their language tags, and the
    first one is tagged ``original_language`` where it has none."""
    import av

    check_layout(channels, "the mix")
    code = language_code(language, matroska=info.matroska)
    container = "matroska" if info.matroska else "mp4"
    with (
        atomic_path(destination) as temporary,
        av.open(str(info.path)) as source,
        av.open(str(temporary), "w", format=container) as out,
    ):
        copied = {}
        for stream in source.streams.video:
            copied[stream.index] = out.add_stream_from_template(stream)
        dub = out.add_stream("aac", rate=rate)
        dub.layout = LAYOUTS[channels]
        dub.metadata["language"] = code
        dub.metadata["title"] = title
        dub.disposition = av.stream.Disposition.default
        for position, stream in enumerate(source.streams.audio):
            kept = out.add_stream_from_template(stream)
            kept.disposition = av.stream.Disposition(0)  # the dub is the default
            own = stream.metadata.get("language")
            if own in (None, "", "und") and position == 0 and original_language:
                own = language_code(original_language, matroska=info.matroska)
            kept.metadata["language"] = own or "und"
            kept.metadata["title"] = stream.metadata.get("title") or "Original"
            copied[stream.index] = kept
        text = out.add_stream("srt" if info.matroska else "mov_text")
        text.metadata["language"] = code
        text.codec_context.subtitle_header = _ASS_HEADER
        text.codec_context.time_base = _MS
        # interleaved by time, so a long film is never held in the muxer's queue
        added = heapq.merge(
            _audio_packets(dub, mix, rate, channels),
            _subtitle_packets(text, subtitles),
            key=_seconds,
        )
        upcoming = next(added, None)
        streams = [*source.streams.video, *source.streams.audio]
        for packet in source.demux(streams):
            if packet.dts is None:  # the demuxer's flush packet
                continue
            now = float(packet.dts * packet.time_base)
            while upcoming is not None and _seconds(upcoming) <= now:
                out.mux(upcoming)
                upcoming = next(added, None)
            packet.stream = copied[packet.stream.index]
            out.mux(packet)
        while upcoming is not None:
            out.mux(upcoming)
            upcoming = next(added, None)
    return destination
