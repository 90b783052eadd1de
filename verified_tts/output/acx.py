"""ACX mastering and the ACX check: bring a chapter to audiobook levels, and measure any file.

ACX (Audible's production standard) asks every file for an RMS level between -23 and -18 dB,
sample peaks at or below -3 dB, a noise floor at or below -60 dB, 0.5-1 s of room tone at the head
and 1-5 s at the tail, and at most 120 minutes; MP3 deliveries are 192 kbps CBR at 44.1 kHz.
:func:`master` turns an assembled chapter into such a file: one gain to the target RMS, a
look-ahead peak limiter (a minimum filter of the gain each sample needs, smoothed with a box no
wider than the filter, so no peak passes the ceiling), and a seeded low room tone instead of
digital silence. :func:`measure` reads any audio file that FFmpeg decodes (a producer's own
recordings too) in blocks, so a two-hour file is never held whole, and :func:`check` judges the
figures against :class:`AcxLimits`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.errors import UserError

__all__ = [
    "AUDIO_SUFFIXES",
    "AcxLimits",
    "AcxResult",
    "check",
    "check_paths",
    "limit_peaks",
    "master",
    "measure",
    "measure_blocks",
]

AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".m4b", ".m4a", ".mp4", ".aac", ".ogg", ".opus")
_FRAME_S = 0.01  # 10 ms frames for head/tail room tone
_FLOOR_WINDOW_S = 0.5  # the noise floor is the RMS of the quietest half second
_SILENT = 1e-12
_BLOCK = 1 << 20  # samples per block in mastering


def _db(value: float) -> float:
    return 20 * math.log10(value) if value > _SILENT else -math.inf


@dataclass(frozen=True)
class AcxLimits:
    """ACX's requirements (dBFS, seconds)."""

    rms_min_db: float = -23.0
    rms_max_db: float = -18.0
    peak_max_db: float = -3.0
    noise_floor_max_db: float = -60.0
    head_s: tuple[float, float] = (0.5, 1.0)
    tail_s: tuple[float, float] = (1.0, 5.0)
    max_minutes: float = 120.0
    mp3_bitrate: int = 192_000
    mp3_sample_rate: int = 44_100


@dataclass(frozen=True)
class AcxResult:
    """One file's measured values and verdict (``failures`` empty means it passes)."""

    path: str
    duration_s: float
    sample_rate: int
    channels: int
    codec: str
    bit_rate: int | None
    constant_bit_rate: bool | None  # MP3 only: every frame the same size (+-1 padding byte)
    rms_db: float
    peak_db: float
    noise_floor_db: float
    head_s: float
    tail_s: float
    failures: tuple[str, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        return not self.failures

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("rms_db", "peak_db", "noise_floor_db"):
            data[key] = round(data[key], 2) if math.isfinite(data[key]) else None
        data["head_s"], data["tail_s"] = round(self.head_s, 3), round(self.tail_s, 3)
        data["duration_s"] = round(self.duration_s, 3)
        data["failures"] = list(self.failures)
        data["passed"] = self.passed
        return data


# --- mastering ------------------------------------------------------------------------------


def _limit_block(audio: np.ndarray, ceiling: float, half: int) -> np.ndarray:
    from scipy.ndimage import minimum_filter1d, uniform_filter1d

    needed = np.minimum(1.0, ceiling / np.maximum(np.abs(audio), _SILENT)).astype(np.float32)
    gain = minimum_filter1d(needed, size=2 * half + 1, mode="nearest")
    gain = uniform_filter1d(gain, size=half | 1, mode="nearest")  # odd size: centred
    return audio * np.minimum(gain, needed)  # float rounding in the box cannot overshoot


def limit_peaks(
    audio: np.ndarray,
    sample_rate: int,
    ceiling_db: float,
    *,
    lookahead_s: float = 0.005,
    inplace: bool = False,
) -> np.ndarray:
    """A look-ahead brick-wall limiter: no sample's magnitude ends above ``ceiling_db``.

    The gain each sample needs is min(1, ceiling/|x|); a minimum filter of half-width L spreads
    every dip over L samples each side, and a centred box of half-width L/2 smooths it. Every
    value the box averages around a peak came from a window containing that peak, so the peak
    still gets at most its own gain: the ceiling holds exactly while the gain moves smoothly.
    Works in blocks with 2L samples of the *original* signal as context on each side, so the
    result does not depend on the block size and a long chapter can be limited in place.
    """
    audio = np.asarray(audio, dtype=np.float32)
    ceiling = 10 ** (ceiling_db / 20)
    if audio.size == 0 or _peak(audio) <= ceiling:
        return audio
    out = audio if inplace else np.empty_like(audio)
    margin = 2 * max(1, int(lookahead_s * sample_rate))
    before = np.zeros(0, dtype=np.float32)  # original samples just before this block
    for start in range(0, audio.size, _BLOCK):
        stop = min(audio.size, start + _BLOCK)
        ahead = audio[start : min(audio.size, stop + margin)]
        limited = _limit_block(np.concatenate([before, ahead]), ceiling, margin // 2)
        offset = len(before)
        before = audio[max(start, stop - margin) : stop].copy()  # before it is overwritten
        out[start:stop] = limited[offset : offset + stop - start]
    return out


def _peak(audio: np.ndarray) -> float:
    """Largest magnitude, a block at a time (no full-length temporary)."""
    return max(
        (float(np.max(np.abs(audio[i : i + _BLOCK]))) for i in range(0, audio.size, _BLOCK)),
        default=0.0,
    )


def _rms(audio: np.ndarray) -> float:
    energy = sum(
        float(np.dot(block, block))
        for block in (
            audio[i : i + _BLOCK].astype(np.float64) for i in range(0, audio.size, _BLOCK)
        )
    )
    return math.sqrt(energy / max(audio.size, 1))


def master(
    audio: np.ndarray,
    sample_rate: int,
    *,
    rms_db: float = -20.0,
    peak_db: float = -3.5,
    room_tone_db: float | None = -75.0,
    seed: int = 0,
    inplace: bool = False,
) -> np.ndarray:
    """Bring an assembled chapter to ``rms_db`` RMS with peaks at most ``peak_db``.

    The gain is set on the whole file (speech and pauses, as ACX measures it), peaks above the
    ceiling are limited, and the gain is corrected twice for what the limiter took. A seeded
    white room tone at ``room_tone_db`` (None: none) replaces digital silence, which ACX
    reviewers reject, while staying far under the -60 dB noise floor limit. Everything runs in
    blocks; with ``inplace`` the chapter's own buffer is mastered, so it costs no second copy.
    """
    audio = np.asarray(audio, dtype=np.float32)
    if audio.size == 0 or _peak(audio) == 0.0:
        return audio
    if not inplace:
        audio = audio.copy()
    target = 10 ** (rms_db / 20)
    for _ in range(3):
        audio *= np.float32(target / _rms(audio))
        limit_peaks(audio, sample_rate, peak_db, inplace=True)
    if room_tone_db is not None:
        rng = np.random.default_rng(seed)
        level = np.float32(10 ** (room_tone_db / 20))
        for start in range(0, audio.size, _BLOCK):
            block = audio[start : start + _BLOCK]
            block += rng.standard_normal(block.size, dtype=np.float32) * level
        limit_peaks(audio, sample_rate, peak_db, inplace=True)
    return audio


# --- measuring ------------------------------------------------------------------------------


@dataclass
class _Accumulator:
    """Running sums over blocks: total energy, peak, and 10 ms frame energies."""

    sample_rate: int
    frame: int = 0
    count: int = 0
    energy: float = 0.0
    peak: float = 0.0
    frames: list[np.ndarray] = field(default_factory=list)
    carry: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))

    def __post_init__(self) -> None:
        self.frame = max(1, int(round(_FRAME_S * self.sample_rate)))

    def add(self, block: np.ndarray) -> None:
        # block: (samples,) or (samples, channels); a frame's energy is over all channels
        block = np.asarray(block, dtype=np.float64)
        if block.ndim == 2:
            power = np.mean(np.square(block), axis=1)
            self.peak = max(self.peak, float(np.max(np.abs(block))) if block.size else 0.0)
        else:
            power = np.square(block)
            self.peak = max(self.peak, float(np.max(np.abs(block))) if block.size else 0.0)
        self.count += len(power)
        self.energy += float(np.sum(power))
        power = np.concatenate([self.carry, power])
        whole = len(power) // self.frame * self.frame
        if whole:
            self.frames.append(power[:whole].reshape(-1, self.frame).mean(axis=1))
        self.carry = power[whole:]

    def frame_power(self) -> np.ndarray:
        parts = list(self.frames)
        if self.carry.size:
            parts.append(np.array([self.carry.mean()]))
        return np.concatenate(parts) if parts else np.zeros(0)


def _edges(frame_db: np.ndarray, threshold_db: float) -> tuple[float, float]:
    """Seconds before the first and after the last 10 ms frame above the threshold."""
    loud = np.flatnonzero(frame_db > threshold_db)
    if loud.size == 0:
        whole = len(frame_db) * _FRAME_S
        return whole, whole
    return float(loud[0] * _FRAME_S), float((len(frame_db) - 1 - loud[-1]) * _FRAME_S)


def measure_blocks(
    blocks: Iterable[np.ndarray], sample_rate: int
) -> tuple[float, float, float, float, float, float]:
    """(duration_s, rms_db, peak_db, noise_floor_db, head_s, tail_s) of audio given in blocks."""
    acc = _Accumulator(sample_rate)
    for block in blocks:
        acc.add(block)
    if acc.count == 0:
        return 0.0, -math.inf, -math.inf, -math.inf, 0.0, 0.0
    power = acc.frame_power()
    per_window = max(1, int(round(_FLOOR_WINDOW_S / _FRAME_S)))
    if len(power) >= per_window:
        window = np.convolve(power, np.ones(per_window) / per_window, mode="valid")
        floor = float(np.sqrt(max(window.min(), 0.0)))
    else:
        floor = float(np.sqrt(power.mean()))
    frame_db = 10 * np.log10(np.maximum(power, 1e-20))
    floor_db = _db(floor)
    # Speech is whatever rises clearly above the floor, and at least above -50 dBFS.
    threshold = max(-50.0, floor_db + 15.0) if math.isfinite(floor_db) else -50.0
    head, tail = _edges(frame_db, threshold)
    rms = math.sqrt(acc.energy / acc.count)
    return acc.count / sample_rate, _db(rms), _db(acc.peak), floor_db, head, tail


def _decoded_blocks(container: Any, stream: Any) -> Iterator[np.ndarray]:
    import av

    # One resampler to planar float keeps every codec's sample format out of the arithmetic.
    resampler = av.AudioResampler(format="fltp", layout=stream.layout, rate=stream.rate)
    for frame in container.decode(stream):
        for out in resampler.resample(frame):
            yield out.to_ndarray().T  # (samples, channels)
    for out in resampler.resample(None):
        yield out.to_ndarray().T


def _mp3_cbr(path: Path) -> bool | None:
    """True when every MP3 frame has the same size up to the one padding byte."""
    import av

    with av.open(str(path)) as container:
        sizes = {packet.size for packet in container.demux(audio=0) if packet.size}
    return (max(sizes) - min(sizes) <= 1) if sizes else None


def measure(path: str | os.PathLike) -> AcxResult:
    """Measure one audio file (any format FFmpeg decodes); failures are left for :func:`check`."""
    import av

    path = Path(path)
    try:
        container = av.open(str(path))
    except (av.error.FFmpegError, OSError) as error:
        raise UserError(
            f"cannot read {path} as audio ({error}): give WAV, FLAC, MP3 or M4B files"
        ) from None
    with container:
        if not container.streams.audio:
            raise UserError(f"{path} has no audio stream: give WAV, FLAC, MP3 or M4B files")
        stream = container.streams.audio[0]
        codec = stream.codec_context.name
        codec = "mp3" if codec.startswith("mp3") else codec  # the decoder may be mp3float
        sample_rate, channels = stream.rate, stream.channels
        bit_rate = stream.bit_rate or container.bit_rate or None
        try:
            figures = measure_blocks(_decoded_blocks(container, stream), sample_rate)
        except av.error.FFmpegError as error:
            raise UserError(f"{path} is damaged: decoding stopped ({error})") from None
    cbr = _mp3_cbr(path) if codec == "mp3" else None
    duration, rms, peak, floor, head, tail = figures
    return AcxResult(
        str(path),
        duration,
        sample_rate,
        channels,
        codec,
        bit_rate,
        cbr,
        rms,
        peak,
        floor,
        head,
        tail,
    )


def check(result: AcxResult, limits: AcxLimits | None = None) -> AcxResult:
    """The same measurement with every requirement it misses written out."""
    limits = limits or AcxLimits()
    failures = []
    if not limits.rms_min_db <= result.rms_db <= limits.rms_max_db:
        failures.append(
            f"RMS {result.rms_db:.1f} dB outside {limits.rms_min_db:g}..{limits.rms_max_db:g} dB"
        )
    if result.peak_db > limits.peak_max_db:
        failures.append(f"peak {result.peak_db:.1f} dB above {limits.peak_max_db:g} dB")
    if result.noise_floor_db > limits.noise_floor_max_db:
        failures.append(
            f"noise floor {result.noise_floor_db:.1f} dB above {limits.noise_floor_max_db:g} dB"
        )
    low, high = limits.head_s
    if not low <= result.head_s <= high:
        failures.append(f"head room tone {result.head_s:.2f} s outside {low:g}..{high:g} s")
    low, high = limits.tail_s
    if not low <= result.tail_s <= high:
        failures.append(f"tail room tone {result.tail_s:.2f} s outside {low:g}..{high:g} s")
    if result.duration_s > limits.max_minutes * 60:
        failures.append(
            f"{result.duration_s / 60:.1f} minutes, more than {limits.max_minutes:g} per file"
        )
    if result.codec == "mp3":
        if result.sample_rate != limits.mp3_sample_rate:
            failures.append(f"MP3 at {result.sample_rate} Hz, not {limits.mp3_sample_rate} Hz")
        if result.bit_rate != limits.mp3_bitrate:
            kbps = (result.bit_rate or 0) // 1000
            failures.append(f"MP3 at {kbps} kbps, not {limits.mp3_bitrate // 1000} kbps")
        if result.constant_bit_rate is False:
            failures.append("MP3 is not constant bit rate")
    return AcxResult(**{**asdict(result), "failures": tuple(failures)})


def check_paths(paths: Sequence[str | os.PathLike]) -> list[AcxResult]:
    """Check every audio file named, or found (sorted, recursively) in a named folder."""
    files: list[Path] = []
    for given in map(Path, paths):
        if given.is_dir():
            found = sorted(
                p for p in given.rglob("*") if p.suffix.lower() in AUDIO_SUFFIXES and p.is_file()
            )
            found = [p for p in found if "store" not in p.relative_to(given).parts]
            if not found:
                raise UserError(f"{given} holds no audio files ({', '.join(AUDIO_SUFFIXES)})")
            files.extend(found)
        elif given.is_file():
            files.append(given)
        else:
            raise UserError(f"{given} does not exist: give audio files or a folder of them")
    return [check(measure(path)) for path in files]
