"""ROC maths for one gate side: false alarms on clean cases against recall on faulted ones.

A *side* is one metric read in one direction: ``max`` when a high value is suspicious (a gate
``metric <= bound``), ``min`` when a low one is (``metric >= bound``). A case whose metric is
missing (NaN: that verifier did not report it) is never flagged, exactly as a gate does not
apply to a metric that was not reported. Thresholds are placed on clean values so that at most
``floor(rate * n)`` clean cases fall strictly beyond them; ties never push the rate over it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Side", "auc", "flags", "roc_points", "threshold_at"]


@dataclass(frozen=True)
class Side:
    """A metric read in one direction: ``max`` (high is bad) or ``min`` (low is bad)."""

    metric: str
    bound: str  # "max" or "min"

    def __post_init__(self) -> None:
        if self.bound not in ("max", "min"):
            raise ValueError(f"bound must be 'max' or 'min', not {self.bound!r}")

    @property
    def label(self) -> str:
        return f"{self.metric} ({'high' if self.bound == 'max' else 'low'} is bad)"

    def suspicion(self, values: np.ndarray) -> np.ndarray:
        """Values turned so that larger means more suspicious; missing -> -inf (never flagged)."""
        values = np.asarray(values, dtype=np.float64)
        out = values if self.bound == "max" else -values
        return np.where(np.isnan(out), -np.inf, out)


def flags(side: Side, values: np.ndarray, threshold: float) -> np.ndarray:
    """Which cases the gate ``side`` at ``threshold`` rejects (strictly beyond the bound)."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        beyond = values > threshold if side.bound == "max" else values < threshold
    return beyond & ~np.isnan(values)


def threshold_at(side: Side, clean: np.ndarray, rate: float) -> float:
    """The tightest bound that rejects at most ``floor(rate * n)`` of the clean values.

    With ``m = floor(rate * n)`` the bound is the (m+1)-th worst clean value, so only the m worse
    ones lie strictly beyond it. No clean values: +-inf (the gate rejects nothing).
    """
    clean = np.asarray(clean, dtype=np.float64)
    clean = clean[~np.isnan(clean)]
    if clean.size == 0:
        return math.inf if side.bound == "max" else -math.inf
    allowed = min(clean.size - 1, int(math.floor(rate * clean.size + 1e-9)))
    worst_first = np.sort(clean)[::-1] if side.bound == "max" else np.sort(clean)
    return float(worst_first[allowed])


def auc(side: Side, clean: np.ndarray, faulted: np.ndarray) -> float:
    """Area under the ROC curve: P(a faulted case looks worse than a clean one), ties half."""
    from scipy.stats import rankdata

    negative, positive = side.suspicion(clean), side.suspicion(faulted)
    if negative.size == 0 or positive.size == 0:
        return math.nan
    ranks = rankdata(np.concatenate([positive, negative]))
    rank_sum = float(ranks[: positive.size].sum())
    u = rank_sum - positive.size * (positive.size + 1) / 2.0
    return u / (positive.size * negative.size)


def roc_points(
    side: Side, clean: np.ndarray, faulted: np.ndarray, max_points: int = 60
) -> list[tuple[float, float]]:
    """(false-alarm rate, recall) at every distinct threshold, thinned to ``max_points``."""
    negative, positive = side.suspicion(clean), side.suspicion(faulted)
    if negative.size == 0 or positive.size == 0:
        return []
    cuts = np.unique(np.concatenate([negative, positive]))[::-1]
    cuts = cuts[np.isfinite(cuts)]
    fpr = [(negative >= c).mean() for c in cuts]
    tpr = [(positive >= c).mean() for c in cuts]
    points = [(0.0, 0.0), *zip(fpr, tpr, strict=True), (1.0, 1.0)]
    if len(points) > max_points:
        keep = np.unique(np.linspace(0, len(points) - 1, max_points).round().astype(int))
        points = [points[i] for i in keep]
    return [(float(x), float(y)) for x, y in points]
