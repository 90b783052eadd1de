"""Resemblyzer's mel spectrogram in NumPy, without librosa.

Resemblyzer computes its encoder's input with ``librosa.feature.melspectrogram`` (16 kHz, a 25 ms
Hann window every 10 ms, 40 Slaney mel bands, power spectrum, centred frames padded with zeros).
That call costs seconds of one core the first time in each process, for librosa's lazy imports
and numba's kernels, and every render, Ray actor and server that loads the speaker verifier pays
it. This module computes the same matrix with a NumPy FFT and a filter bank built once; the tests
hold it to librosa's own output.
"""

from __future__ import annotations

from functools import cache

import numpy as np

__all__ = ["mel_spectrogram"]

_SAMPLE_RATE = 16_000
_N_FFT = 400  # 25 ms
_HOP = 160  # 10 ms
_N_MELS = 40


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale (librosa's default): linear to 1 kHz, logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    linear = hz / (200.0 / 3)
    log_step = np.log(6.4) / 27.0
    return np.where(hz >= 1000.0, 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / log_step, linear)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    log_step = np.log(6.4) / 27.0
    return np.where(mel >= 15.0, 1000.0 * np.exp(log_step * (mel - 15.0)), mel * (200.0 / 3))


@cache
def _filter_bank() -> np.ndarray:
    """[40, 201] triangular filters on Slaney's mel scale, area-normalised (``norm='slaney'``)."""
    fft_freqs = np.fft.rfftfreq(_N_FFT, 1.0 / _SAMPLE_RATE)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(_SAMPLE_RATE / 2), _N_MELS + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / widths[:-1, None]
    upper = ramps[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return weights.astype(np.float32)


@cache
def _window() -> np.ndarray:
    """A periodic Hann window (``scipy.signal.get_window('hann', n, fftbins=True)``)."""
    return (0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(_N_FFT) / _N_FFT)).astype(np.float32)


def mel_spectrogram(wav: np.ndarray) -> np.ndarray:
    """``resemblyzer.audio.wav_to_mel_spectrogram``: [frames, 40] float32 of a 16 kHz wave."""
    wav = np.asarray(wav, dtype=np.float32).reshape(-1)
    padded = np.pad(wav, _N_FFT // 2)  # centred frames, zeros beyond the ends
    count = 1 + (padded.size - _N_FFT) // _HOP
    frames = np.lib.stride_tricks.sliding_window_view(padded, _N_FFT)[::_HOP][:count]
    power = np.abs(np.fft.rfft(frames * _window(), axis=1)) ** 2
    return (power.astype(np.float32) @ _filter_bank().T).astype(np.float32)
