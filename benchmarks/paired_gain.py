"""The paired comparison every benchmark reports: a mean per-sentence gain and its interval.

``gains`` are per-sentence differences (positive = the second arm is better, e.g. candidate 0's
judge WER minus the winner's). The interval is a seeded percentile bootstrap over sentences, so
a rerun on the same scores gives the same figures; ``better``/``worse``/``same`` count the
sentences each way, because on a good voice most gains are zero and a mean alone hides that.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence

__all__ = ["paired_gain"]


def paired_gain(gains: Sequence[float], resamples: int = 5000, *, mean_key: str = "mean") -> dict:
    """Mean of ``gains`` (under ``mean_key``) with a 95 % bootstrap interval and the counts."""
    rng = random.Random(0)
    means = sorted(statistics.fmean(rng.choice(gains) for _ in gains) for _ in range(resamples))
    return {
        mean_key: round(statistics.fmean(gains), 4),
        "ci95": [round(means[int(0.025 * resamples)], 4), round(means[int(0.975 * resamples)], 4)],
        "better": sum(g > 0 for g in gains),
        "worse": sum(g < 0 for g in gains),
        "same": sum(g == 0 for g in gains),
    }
