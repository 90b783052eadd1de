"""Audio bytes in the response formats of OpenAI's speech API: wav, flac, mp3, opus, aac, pcm.

:func:`encode` turns a winner's float samples into one of them, in memory: WAV and FLAC through
soundfile at the voice's own rate, MP3 (libmp3lame), Opus (in Ogg, 48 kHz) and AAC (ADTS) through
PyAV's bundled FFmpeg, and ``pcm`` as OpenAI defines it: raw 16-bit little-endian mono at
24 kHz. The same samples give the same bytes, so a repeat served from the store is identical.
"""

from __future__ import annotations

import io

import numpy as np

from verified_tts.audio import resample

__all__ = ["MEDIA_TYPES", "encode"]

MEDIA_TYPES = {
    "wav": "audio/wav",
    "flac": "audio/flac",
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "pcm": "audio/pcm",
}
_CODECS = {
    "mp3": ("mp3", "libmp3lame", None),
    "opus": ("ogg", "libopus", 48000),
    "aac": ("adts", "aac", None),
}
PCM_RATE = 24000


def _pcm16(samples: np.ndarray) -> np.ndarray:
    return (np.clip(samples, -1.0, 1.0) * 32767.0).round().astype("<i2")


def _ffmpeg(samples: np.ndarray, rate: int, fmt: str) -> bytes:
    import av

    container_format, codec, codec_rate = _CODECS[fmt]
    if codec_rate and codec_rate != rate:
        samples, rate = resample(samples, rate, codec_rate), codec_rate
    buffer = io.BytesIO()
    with av.open(
        buffer, "w", format=container_format, options={"fflags": "+bitexact"}
    ) as container:
        stream = container.add_stream(codec, rate=rate)
        stream.layout = "mono"
        if fmt == "mp3":
            stream.bit_rate = 128_000
        container.metadata.clear()
        pcm = _pcm16(samples).reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(pcm, format="s16", layout="mono")
        frame.sample_rate = rate
        frame.pts = 0
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return buffer.getvalue()


def encode(samples: np.ndarray, rate: int, fmt: str) -> bytes:
    """``samples`` (float, mono) at ``rate`` as a file of format ``fmt``."""
    samples = np.asarray(samples, dtype=np.float32).reshape(-1)
    if fmt == "pcm":
        return _pcm16(resample(samples, rate, PCM_RATE)).tobytes()
    if fmt in ("wav", "flac"):
        import soundfile

        buffer = io.BytesIO()
        soundfile.write(buffer, samples, rate, format=fmt.upper(), subtype="PCM_16")
        return buffer.getvalue()
    return _ffmpeg(samples, rate, fmt)
