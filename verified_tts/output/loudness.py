"""Programme loudness as broadcasters measure it: integrated loudness, loudness range, true peak.

:class:`LoudnessMeter` takes a programme a block at a time (a film's soundtrack never has to be in
memory twice) and keeps, per 10 ms, the K-weighted power of the channels summed with their
ITU-R BS.1770 weights, plus the running true peak. From those: integrated loudness as BS.1770-4
defines it (400 ms blocks every 100 ms, the -70 LUFS absolute and -10 LU relative gates), loudness
range as EBU Tech 3342 does (3 s short-term windows every 100 ms, gated at -70 LUFS and 20 LU below
their mean, the spread from the 10th to the 95th percentile), and the K-weighted level of any
interval (a dubbed line can be shorter than a gating block), used for each cue's
dialogue-to-background ratio. True peak is the largest magnitude of the signal oversampled four
times (polyphase, each block with its neighbours' samples as context, as BS.1770 Annex 2
describes), in dBTP. :func:`normalize_loudness` brings a programme to a target (EBU R128's -23
LUFS, or a streaming target such as -16) under a true-peak ceiling, with the look-ahead limiter of
the ACX mastering on the oversampled peak envelope, and measures the result again: the figures
written to ``dub.json`` are measured, not intended.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Loudness",
    "LoudnessMeter",
    "measure_loudness",
    "normalize_loudness",
    "true_peak_dbtp",
]

_OVERSAMPLE = 4
_CONTEXT = 64  # input samples each side: longer than the polyphase filter's half-length
_BIN_S = 0.01
_BLOCK_BINS = 40  # BS.1770 gating block: 400 ms ...
_STEP_BINS = 10  # ... every 100 ms
_SHORT_TERM_BINS = 300  # Tech 3342 short-term window: 3 s, every 100 ms
_SILENT = -120.0
_CHUNK_S = 10.0  # how much of a programme is processed at once
# BS.1770's K-weighting as pyloudnorm's meter builds it: a high shelf, then a high pass
_K_WEIGHTING = (
    (4.0, 1 / math.sqrt(2), 1500.0, "high_shelf"),
    (0.0, 0.5, 38.0, "high_pass"),
)


@dataclass(frozen=True)
class Loudness:
    """A programme's measured loudness figures."""

    integrated_lufs: float
    range_lu: float
    true_peak_dbtp: float

    def record(self) -> dict[str, float]:
        return {
            "integrated_lufs": round(self.integrated_lufs, 2),
            "loudness_range_lu": round(self.range_lu, 2),
            "true_peak_dbtp": round(self.true_peak_dbtp, 2),
        }


def _frames(audio: np.ndarray) -> np.ndarray:
    audio = np.asarray(audio, dtype=np.float32)
    return audio.reshape(-1, 1) if audio.ndim == 1 else audio


def _weights(channels: int) -> np.ndarray:
    # BS.1770 channel weights: 1 for left, right and centre, 1.41 for surrounds, LFE left out
    if channels == 6:
        return np.array([1.0, 1.0, 1.0, 0.0, 1.41, 1.41])
    return np.ones(channels)


def _to_lufs(mean_square: float) -> float:
    return -0.691 + 10.0 * math.log10(mean_square) if mean_square > 0 else _SILENT


def _db(value: float) -> float:
    return 20.0 * math.log10(value) if value > 0 else _SILENT


class LoudnessMeter:
    """Feed a programme in blocks of (frames, channels); read its loudness figures at the end."""

    def __init__(self, sample_rate: int, channels: int) -> None:
        from pyloudnorm import IIRfilter
        from scipy.signal import lfilter_zi

        self.sample_rate = sample_rate
        self.channels = channels
        self._weights = _weights(channels)
        self._stages = [IIRfilter(g, q, f, sample_rate, kind) for g, q, f, kind in _K_WEIGHTING]
        self._state = [np.zeros((channels, len(lfilter_zi(s.b, s.a)))) for s in self._stages]
        self._bin = max(1, round(_BIN_S * sample_rate))
        self._carry = np.zeros(0)  # weighted power of samples not yet a whole bin
        self._bins: list[np.ndarray] = []
        self._left = np.zeros((0, channels), dtype=np.float32)  # context before the pending block
        self._pending: np.ndarray | None = None
        self._peak = 0.0
        self.frames = 0

    def feed(self, block: np.ndarray) -> None:
        from scipy.signal import lfilter

        block = _frames(block)
        if block.shape[0] == 0:
            return
        self.frames += block.shape[0]
        weighted = block.astype(np.float64)
        for stage, state in zip(self._stages, self._state, strict=True):
            for channel in range(self.channels):
                weighted[:, channel], state[channel] = lfilter(
                    stage.b, stage.a, weighted[:, channel], zi=state[channel]
                )
        power = np.concatenate([self._carry, (weighted**2) @ self._weights])
        whole = (power.size // self._bin) * self._bin
        self._bins.append(power[:whole].reshape(-1, self._bin).sum(axis=1))
        self._carry = power[whole:]
        self._peak_of(block)

    def _peak_of(self, block: np.ndarray | None) -> None:
        """True peak of the pending block, now that its right context (``block``) is known."""
        if self._pending is not None:
            right = block[:_CONTEXT] if block is not None else np.zeros((0, self.channels))
            self._peak = max(self._peak, _oversampled_peak(self._left, self._pending, right))
            self._left = self._pending[-_CONTEXT:]
        self._pending = block

    def _finish(self) -> np.ndarray:
        if self._pending is not None:
            self._peak_of(None)
        bins = np.concatenate(self._bins) if self._bins else np.zeros(0)
        if self._carry.size:
            bins = np.concatenate([bins, [self._carry.sum()]])
            self._carry = np.zeros(0)
        self._bins = [bins]
        return bins

    def segment_lufs(self, start_s: float, end_s: float) -> float:
        """K-weighted level (LUFS, ungated) of the interval, to the nearest 10 ms."""
        bins = self._finish()
        first = max(0, round(start_s / _BIN_S))
        last = min(bins.size, max(first + 1, round(end_s / _BIN_S)))
        if last <= first:
            return _SILENT
        return _to_lufs(float(bins[first:last].sum()) / ((last - first) * self._bin))

    def integrated_lufs(self) -> float:
        bins = self._finish()
        blocks = _windows(bins, _BLOCK_BINS, _STEP_BINS) / (_BLOCK_BINS * self._bin)
        if blocks.size == 0:
            return _SILENT
        loud = blocks[_lufs_array(blocks) > -70.0]
        if loud.size == 0:
            return _SILENT
        relative = _to_lufs(float(loud.mean())) - 10.0
        gated = loud[_lufs_array(loud) > relative]
        return _to_lufs(float(gated.mean())) if gated.size else _SILENT

    def range_lu(self) -> float:
        bins = self._finish()
        windows = _windows(bins, _SHORT_TERM_BINS, _STEP_BINS) / (_SHORT_TERM_BINS * self._bin)
        if windows.size == 0:
            return 0.0
        short_term = _lufs_array(windows)
        kept = windows[short_term > -70.0]
        if kept.size == 0:
            return 0.0
        relative = _to_lufs(float(kept.mean())) - 20.0
        gated = short_term[(short_term > -70.0) & (short_term > relative)]
        if gated.size == 0:
            return 0.0
        low, high = np.percentile(gated, [10, 95])
        return float(high - low)

    def true_peak_dbtp(self) -> float:
        self._finish()
        return _db(self._peak)

    def result(self) -> Loudness:
        return Loudness(self.integrated_lufs(), self.range_lu(), self.true_peak_dbtp())


def _windows(bins: np.ndarray, length: int, step: int) -> np.ndarray:
    """Sums of ``length`` consecutive bins, every ``step`` bins."""
    if bins.size < length:
        return np.zeros(0)
    cumulative = np.concatenate([[0.0], np.cumsum(bins)])
    starts = np.arange(0, bins.size - length + 1, step)
    return cumulative[starts + length] - cumulative[starts]


def _lufs_array(mean_square: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return -0.691 + 10.0 * np.log10(mean_square)


def _oversampled(left: np.ndarray, block: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``block`` four times oversampled, its edges computed with its neighbours as context."""
    from scipy.signal import resample_poly

    padded = np.concatenate([left, block, right]).astype(np.float32)
    over = resample_poly(padded, _OVERSAMPLE, 1, axis=0)
    first = left.shape[0] * _OVERSAMPLE
    return over[first : first + block.shape[0] * _OVERSAMPLE]


def _oversampled_peak(left: np.ndarray, block: np.ndarray, right: np.ndarray) -> float:
    return float(np.max(np.abs(_oversampled(left, block, right)), initial=0.0))


def _chunks(frames: np.ndarray, sample_rate: int) -> Iterable[np.ndarray]:
    step = max(1, round(_CHUNK_S * sample_rate))
    for start in range(0, frames.shape[0], step):
        yield frames[start : start + step]


def measure_loudness(audio: np.ndarray, sample_rate: int) -> Loudness:
    """Integrated loudness, loudness range and true peak of a programme in memory."""
    frames = _frames(audio)
    meter = LoudnessMeter(sample_rate, frames.shape[1])
    for chunk in _chunks(frames, sample_rate):
        meter.feed(chunk)
    return meter.result()


def true_peak_dbtp(audio: np.ndarray, sample_rate: int) -> float:
    frames = _frames(audio)
    meter = LoudnessMeter(sample_rate, frames.shape[1])
    for chunk in _chunks(frames, sample_rate):
        meter.feed(chunk)
    return meter.true_peak_dbtp()


def _peak_envelope(frames: np.ndarray, sample_rate: int) -> np.ndarray:
    """Per sample, the largest oversampled magnitude around it over every channel."""
    envelope = np.empty(frames.shape[0], dtype=np.float32)
    step = max(1, round(_CHUNK_S * sample_rate))
    for start in range(0, frames.shape[0], step):
        block = frames[start : start + step]
        left = frames[max(0, start - _CONTEXT) : start]
        right = frames[start + step : start + step + _CONTEXT]
        over = np.abs(_oversampled(left, block, right)).max(axis=1)
        envelope[start : start + block.shape[0]] = over.reshape(-1, _OVERSAMPLE).max(axis=1)
    return envelope


def normalize_loudness(
    audio: np.ndarray,
    sample_rate: int,
    target_lufs: float,
    ceiling_dbtp: float,
    *,
    attempts: int = 4,
) -> tuple[np.ndarray, float, Loudness]:
    """``audio`` brought to ``target_lufs`` with its true peak at or below ``ceiling_dbtp``,
    in place (the caller's array is the result).

    Gain first; where the true peak would pass the ceiling, the ACX look-ahead limiter runs on
    the oversampled peak envelope and its gain is applied to every channel. Limiting lowers the
    loudness a little, so gain and limiting repeat until both figures hold (a few rounds).
    Returns (the audio, the overall gain in dB before limiting, its measured loudness)."""
    from verified_tts.output.acx import limit_peaks

    frames = _frames(audio)
    measured = measure_loudness(frames, sample_rate)
    total_gain_db = 0.0
    ceiling = ceiling_dbtp
    for _ in range(attempts):
        if measured.integrated_lufs <= _SILENT:
            break
        gain_db = target_lufs - measured.integrated_lufs
        total_gain_db += gain_db
        frames *= np.float32(10 ** (gain_db / 20))
        if measured.true_peak_dbtp + gain_db > ceiling_dbtp:
            envelope = _peak_envelope(frames, sample_rate)
            limited = limit_peaks(envelope, sample_rate, ceiling)
            np.divide(limited, envelope, out=envelope, where=envelope > 0)
            envelope[limited == 0] = 1.0
            frames *= envelope[:, None]
        measured = measure_loudness(frames, sample_rate)
        if measured.true_peak_dbtp > ceiling_dbtp:
            ceiling -= measured.true_peak_dbtp - ceiling_dbtp + 0.05  # inter-sample overshoot
            continue
        if abs(measured.integrated_lufs - target_lufs) <= 0.1:
            break
    return frames, total_gain_db, measured
