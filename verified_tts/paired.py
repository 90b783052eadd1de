"""The paired comparison every quality claim reports: a mean per-sentence gain and its interval.

Two arms scored on the same sentences differ per sentence; :func:`paired_gain` gives the mean of
those differences with a 95 % percentile bootstrap interval over sentences (seeded, so a rerun
on the same scores gives the same figures) and counts the sentences each way, because on a good
voice most gains are zero and a mean alone hides that. :func:`paired_bootstrap` is the same for
two lists of per-sentence scores (the difference b - a). :func:`bootstrap_draws` and
:func:`percentile_interval` are its two steps, for a benchmark that resamples several statistics
with the same draws. The A/B workflows and the benchmarks all use these. The draws are those of
``random.Random(seed).randrange(count)`` called over and over, made in numpy from the same
Mersenne Twister words (:func:`bootstrap_indices`): the figures are the ones the pure-Python
resampling gave, at a fraction of its time on a thousand sentences.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "RESAMPLES",
    "PairedGain",
    "bootstrap_draws",
    "bootstrap_indices",
    "paired_bootstrap",
    "paired_gain",
    "percentile_interval",
]

RESAMPLES = 5000


def bootstrap_indices(count: int, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """``resamples`` rows of ``count`` indices drawn with replacement, from one seeded stream:
    row by row the draws of ``random.Random(seed).randrange(count)``. Python draws an index by
    taking the top ``count.bit_length()`` bits of the next 32-bit word and drawing again while
    that is ``count`` or more, so the accepted values of the same words, in order, are its draws.
    """
    if count <= 0:
        raise ValueError(f"a bootstrap needs at least one item to draw from (got {count})")
    words = np.random.MT19937()
    state = random.Random(seed).getstate()[1]
    words.state = {
        "bit_generator": "MT19937",
        "state": {"key": np.asarray(state[:-1], dtype=np.uint32), "pos": state[-1]},
    }
    shift = 32 - count.bit_length()
    need = count * resamples
    drawn = np.empty(need, dtype=np.int64)
    filled = 0
    while filled < need:
        # about count / 2**bits of the words are accepted; ask for a little more than that
        ask = max(1024, int((need - filled) * 1.1 * (1 << count.bit_length()) / count))
        values = (words.random_raw(ask) >> shift).astype(np.int64)
        values = values[values < count][: need - filled]
        drawn[filled : filled + values.size] = values
        filled += values.size
    return drawn.reshape(resamples, count)


def bootstrap_draws(count: int, resamples: int = RESAMPLES, seed: int = 0) -> Iterator[list[int]]:
    """``resamples`` lists of ``count`` indices drawn with replacement, from one seeded stream
    (the rows of :func:`bootstrap_indices`)."""
    for row in bootstrap_indices(count, resamples, seed):
        yield row.tolist()


def percentile_interval(values: Sequence[float]) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of ``values`` (nearest rank below), rounded to 4 places."""
    ordered = sorted(values)
    return (
        round(ordered[int(0.025 * len(ordered))], 4),
        round(ordered[int(0.975 * len(ordered))], 4),
    )


@dataclass(frozen=True)
class PairedGain:
    """The mean per-sentence gain, its 95 % interval, and how many sentences went each way."""

    mean: float
    low: float
    high: float
    better: int  # sentences whose gain is positive
    worse: int
    same: int

    def as_dict(self, mean_key: str = "mean") -> dict[str, Any]:
        """``{mean_key, ci95: [low, high], better, worse, same}``, as benchmark files hold it."""
        return {
            mean_key: self.mean,
            "ci95": [self.low, self.high],
            "better": self.better,
            "worse": self.worse,
            "same": self.same,
        }

    def as_tuple(self) -> tuple[float, float, float]:
        return self.mean, self.low, self.high


def paired_gain(gains: Sequence[float], resamples: int = RESAMPLES, *, seed: int = 0) -> PairedGain:
    """Mean of ``gains`` (one per sentence) with a 95 % bootstrap interval and the counts."""
    if not gains:
        raise ValueError("a paired gain needs at least one sentence")
    gains = list(gains)
    values = np.asarray(gains, dtype=np.float64)
    draws = bootstrap_indices(len(gains), resamples, seed)
    means: list[float] = []
    for block in np.array_split(draws, max(1, draws.size // 2_000_000)):  # bounded memory
        means.extend(values[block].mean(axis=1).tolist())
    low, high = percentile_interval(means)
    return PairedGain(
        mean=round(statistics.fmean(gains), 4),
        low=low,
        high=high,
        better=sum(g > 0 for g in gains),
        worse=sum(g < 0 for g in gains),
        same=sum(g == 0 for g in gains),
    )


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], resamples: int = RESAMPLES, *, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of b - a over paired sentences and its 95 % interval."""
    if len(a) != len(b):
        raise ValueError(f"paired scores need one of each per sentence ({len(a)} vs {len(b)})")
    return paired_gain([y - x for x, y in zip(a, b, strict=True)], resamples, seed=seed).as_tuple()
