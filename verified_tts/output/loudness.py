"""Programme loudness as broadcasters measure it: integrated loudness, loudness range, true peak.

:class:`LoudnessMeter` takes a programme a block at a time (a film's soundtrack never has to be in
memory twice) and keeps, per 10 ms, the K-weighted power of the channels summed with their ITU-R
BS.1770 weights (surrounds +1.5 dB, the LFE left out: :mod:`~verified_tts.output.channels`), plus
the running true peak. From those: integrated loudness as BS.1770-4 defines
it (400 ms blocks every 100 ms, the -70 LUFS absolute and -10 LU relative gates), loudness range as
EBU Tech 3342 does (3 s short-term windows every 100 ms, gated at -70 LUFS and 20 LU below their
mean, the spread from the 10th to the 95th percentile), and the K-weighted level of any interval (a
dubbed line can be shorter than a gating block), used for each cue's dialogue-to-background ratio.
True peak is the largest magnitude of the signal oversampled four times (a 48-tap interpolation
filter, as BS.1770 Annex 2 describes; each block with its neighbours' samples as context), in dBTP;
a block whose sample peak times the filter's largest gain cannot beat the peak found so far is not
oversampled at all, which makes the measure exact and a film's worth of it cheap.
:func:`normalize_loudness` brings a programme to a target (EBU R128's -23 LUFS, or a streaming
target such as -16) under a true-peak ceiling, with the look-ahead limiter of the ACX mastering on
the oversampled peak envelope, and measures the result again: the figures written to ``dub.json``
are measured, not intended.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from verified_tts.output.channels import bs1770_weights

__all__ = [
    "Loudness",
    "LoudnessMeter",
    "TruePeakMeter",
    "measure_loudness",
    "normalize_loudness",
    "peak_envelope",
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
_SEGMENT = 4096  # samples a streamed true peak oversamples at once, where it must
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


def _to_lufs(mean_square: float) -> float:
    return -0.691 + 10.0 * math.log10(mean_square) if mean_square > 0 else _SILENT


def _db(value: float) -> float:
    return 20.0 * math.log10(value) if value > 0 else _SILENT


class LoudnessMeter:
    """Feed a programme in blocks of (frames, channels); read its loudness figures at the end."""

    def __init__(self, sample_rate: int, channels: int) -> None:
        from pyloudnorm import IIRfilter

        self.sample_rate = sample_rate
        self.channels = channels
        self._weights = bs1770_weights(channels)
        stages = [IIRfilter(g, q, f, sample_rate, kind) for g, q, f, kind in _K_WEIGHTING]
        # both biquads as second-order sections, run over every channel at once (along axis 0:
        # sosfilt's state is then (sections, 2, channels))
        self._sos = np.array([[*s.b, *s.a] for s in stages], dtype=np.float64)
        self._state = np.zeros((len(stages), 2, channels))
        self._bin = max(1, round(_BIN_S * sample_rate))
        self._carry = np.zeros(0)  # weighted power of samples not yet a whole bin
        self._bins: list[np.ndarray] = []
        self.frames = 0

    def feed(self, block: np.ndarray) -> None:
        from scipy.signal import sosfilt

        block = _frames(block)
        if block.shape[0] == 0:
            return
        if block.shape[1] != self.channels:
            raise ValueError(f"a {self.channels}-channel meter was fed {block.shape[1]} channels")
        self.frames += block.shape[0]
        weighted, self._state = sosfilt(self._sos, block, axis=0, zi=self._state)
        power = np.concatenate([self._carry, np.square(weighted) @ self._weights])
        whole = (power.size // self._bin) * self._bin
        self._bins.append(power[:whole].reshape(-1, self._bin).sum(axis=1))
        self._carry = power[whole:]

    def _finish(self) -> np.ndarray:
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

    def levels(self, true_peak_dbtp: float) -> Loudness:
        """The figures, with the true peak measured elsewhere (:func:`true_peak_dbtp`)."""
        return Loudness(self.integrated_lufs(), self.range_lu(), true_peak_dbtp)


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


def _interpolator() -> tuple[np.ndarray, float]:
    """The 4x interpolation filter (48 taps, windowed sinc, gain 4) and the largest gain any of
    its phases can give a signal: no output sample exceeds that times the input's peak."""
    from scipy.signal import firwin

    taps = _OVERSAMPLE * firwin(12 * _OVERSAMPLE, 1.0 / _OVERSAMPLE, window=("kaiser", 5.0))
    bound = max(float(np.abs(taps[phase::_OVERSAMPLE]).sum()) for phase in range(_OVERSAMPLE))
    return taps, bound


_TAPS, _BOUND = _interpolator()


def _oversampled(left: np.ndarray, block: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``block`` four times oversampled, its edges computed with its neighbours as context."""
    from scipy.signal import upfirdn

    padded = np.concatenate([left, block, right]).astype(np.float32)
    over = upfirdn(_TAPS, padded, up=_OVERSAMPLE, axis=0)
    first = left.shape[0] * _OVERSAMPLE + (_TAPS.size - 1) // 2  # the filter's delay
    return over[first : first + block.shape[0] * _OVERSAMPLE]


def _blocks(frames: np.ndarray, sample_rate: int) -> list[tuple[int, int]]:
    step = max(1, round(_CHUNK_S * sample_rate))
    return [(a, min(frames.shape[0], a + step)) for a in range(0, frames.shape[0], step)]


def _with_context(frames: np.ndarray, a: int, b: int):
    return frames[max(0, a - _CONTEXT) : a], frames[a:b], frames[b : b + _CONTEXT]


def _chunks(frames: np.ndarray, sample_rate: int) -> Iterable[np.ndarray]:
    step = max(1, round(_CHUNK_S * sample_rate))
    for start in range(0, frames.shape[0], step):
        yield frames[start : start + step]


def true_peak_dbtp(audio: np.ndarray, sample_rate: int) -> float:
    """Largest magnitude of the four-times oversampled signal, in dBTP (see the module doc)."""
    frames = _frames(audio)
    spans = _blocks(frames, sample_rate)
    peaks = [float(np.max(np.abs(frames[a:b]), initial=0.0)) for a, b in spans]
    best = 0.0
    for index in np.argsort(peaks)[::-1]:
        if peaks[index] * _BOUND <= best:
            break  # no later block can reach the peak found
        a, b = spans[index]
        best = max(best, float(np.max(np.abs(_oversampled(*_with_context(frames, a, b))))))
    return _db(best)


class TruePeakMeter:
    """:func:`true_peak_dbtp` of a programme fed a block at a time: each block is oversampled
    when the next arrives (its neighbours' samples as context), and only where its sample peak
    could beat the peak found so far, so the figure is the one the whole programme gives."""

    def __init__(self) -> None:
        self._left: np.ndarray | None = None
        self._pending: np.ndarray | None = None
        self.best = 0.0

    def feed(self, block: np.ndarray) -> None:
        block = _frames(block)
        if self._pending is not None:
            self._measure(block[:_CONTEXT])
        self._pending = block

    def _measure(self, right: np.ndarray) -> None:
        pending = self._pending
        assert pending is not None
        left = self._left if self._left is not None else pending[:0]
        magnitude = np.abs(pending).max(axis=1) if pending.size else np.zeros(0)
        context = np.concatenate([left, pending, right])
        offset = left.shape[0]
        spans = [(a, min(pending.shape[0], a + _SEGMENT))
                 for a in range(0, pending.shape[0], _SEGMENT)]  # fmt: skip
        peaks = [float(magnitude[a:b].max()) for a, b in spans]
        # loudest stretches first: once none left could beat the peak found, the rest is skipped
        for index in np.argsort(peaks)[::-1]:
            if peaks[index] * _BOUND <= self.best:
                break
            lo, hi = offset + spans[index][0], offset + spans[index][1]
            over = _oversampled(context[max(0, lo - _CONTEXT) : lo], context[lo:hi],
                                context[hi : hi + _CONTEXT])  # fmt: skip
            self.best = max(self.best, float(np.max(np.abs(over), initial=0.0)))
        self._left = pending[-_CONTEXT:]

    def dbtp(self) -> float:
        if self._pending is not None:
            self._measure(self._pending[:0])
            self._pending = None
        return _db(self.best)


def measure_loudness(audio: np.ndarray, sample_rate: int) -> Loudness:
    """Integrated loudness, loudness range and true peak of a programme in memory."""
    frames = _frames(audio)
    meter = LoudnessMeter(sample_rate, frames.shape[1])
    for chunk in _chunks(frames, sample_rate):
        meter.feed(chunk)
    return meter.levels(true_peak_dbtp(frames, sample_rate))


def peak_envelope(frames: np.ndarray, sample_rate: int, ceiling: float) -> np.ndarray:
    """Per sample, the largest magnitude over the channels: oversampled where a block could pass
    ``ceiling`` (linear), the sample magnitude elsewhere (it stays under the ceiling there)."""
    envelope = np.abs(frames).max(axis=1)
    for a, b in _blocks(frames, sample_rate):
        if float(envelope[a:b].max(initial=0.0)) * _BOUND > ceiling:
            over = np.abs(_oversampled(*_with_context(frames, a, b))).max(axis=1)
            envelope[a:b] = over.reshape(-1, _OVERSAMPLE).max(axis=1)
    return envelope


def normalize_loudness(
    audio: np.ndarray,
    sample_rate: int,
    target_lufs: float,
    ceiling_dbtp: float,
    *,
    attempts: int = 4,
    measured: Loudness | None = None,
) -> tuple[np.ndarray, float, Loudness]:
    """``audio`` brought to ``target_lufs`` with its true peak at or below ``ceiling_dbtp``,
    in place (the caller's array is the result).

    Gain first; where the true peak would pass the ceiling, the ACX look-ahead limiter runs on
    the oversampled peak envelope and its gain is applied to every channel. Limiting lowers the
    loudness a little, so gain and limiting repeat until both figures hold (a few rounds).
    ``measured`` is the audio's loudness when the caller has already metered it.
    Returns (the audio, the overall gain in dB before limiting, its measured loudness)."""
    from verified_tts.output.acx import limit_peaks

    frames = _frames(audio)
    measured = measured or measure_loudness(frames, sample_rate)
    total_gain_db = 0.0
    ceiling = ceiling_dbtp
    for _ in range(attempts):
        if measured.integrated_lufs <= _SILENT:
            break
        gain_db = target_lufs - measured.integrated_lufs
        total_gain_db += gain_db
        frames *= np.float32(10 ** (gain_db / 20))
        if measured.true_peak_dbtp + gain_db > ceiling_dbtp:
            envelope = peak_envelope(frames, sample_rate, 10 ** (ceiling / 20))
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
