"""The paired comparison every quality claim reports: a mean per-sentence gain and its interval.

Two arms scored on the same sentences differ per sentence; :func:`paired_gain` gives the mean of
those differences with a 95 % percentile bootstrap interval over sentences (seeded, so a rerun
on the same scores gives the same figures) and counts the sentences each way, because on a good
voice most gains are zero and a mean alone hides that. :func:`paired_bootstrap` is the same for
two lists of per-sentence scores (the difference b - a). :func:`bootstrap_draws` and
:func:`percentile_interval` are its two steps, for a benchmark that resamples several statistics
with the same draws. The A/B workflows and the benchmarks all use these.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "RESAMPLES",
    "PairedGain",
    "bootstrap_draws",
    "paired_bootstrap",
    "paired_gain",
    "percentile_interval",
]

RESAMPLES = 5000


def bootstrap_draws(count: int, resamples: int = RESAMPLES, seed: int = 0) -> Iterator[list[int]]:
    """``resamples`` lists of ``count`` indices drawn with replacement, from one seeded stream."""
    rng = random.Random(seed)
    for _ in range(resamples):
        yield [rng.randrange(count) for _ in range(count)]


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
    means = [
        statistics.fmean(gains[i] for i in draw)
        for draw in bootstrap_draws(len(gains), resamples, seed)
    ]
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
