"""Scoring clips with a set of verifiers, and the speaker reference they are scored against.

:func:`score_clips` is the one place that runs verifiers over a batch: every verifier gets the same
list of clips in one call (so a Ray backend can fan one upload out to every pool), and the scores
of one clip are merged into one :class:`ClipScores` (metrics and detail of every verifier, the
speaker embedding when one verifier gives it). A render, a beam search's partial scoring and
calibration all score through it. :func:`unit_centroid` is the voice a set of speaker embeddings
agrees on: their mean, scaled to unit length, which a render uses as the reference where the user
gave none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from verifiers import Clip, Verifier

__all__ = ["ClipScores", "score_clips", "unit_centroid"]


@dataclass(frozen=True)
class ClipScores:
    """Every verifier's verdict on one clip, merged."""

    metrics: Mapping[str, float] = field(default_factory=dict)
    detail: Mapping[str, Any] = field(default_factory=dict)
    embedding: tuple[float, ...] | None = None  # the speaker embedding, when a verifier gave one

    def record(self) -> dict[str, Any]:
        """The JSON shape the store keeps (plain floats, lists)."""
        return {
            "metrics": dict(self.metrics),
            "detail": dict(self.detail),
            "embedding": None if self.embedding is None else [float(x) for x in self.embedding],
        }


def score_clips(
    verifiers: Sequence[Verifier],
    clips: Sequence[Clip],
    *,
    timer: Callable[[str], AbstractContextManager[Any]] | None = None,
) -> list[ClipScores]:
    """Each verifier over all of ``clips`` in one call, in order; one merged score per clip.

    ``timer(name)`` wraps each verifier's call (a render counts the seconds per verifier). A
    later verifier's metric or detail of the same name wins, as the scoring order says.
    """
    per_verifier = []
    for verifier in verifiers:
        with timer(verifier.name) if timer is not None else nullcontext():
            per_verifier.append(verifier.score(clips))
    merged = []
    for position in range(len(clips)):
        metrics: dict[str, float] = {}
        detail: dict[str, Any] = {}
        embedding = None
        for scores in per_verifier:
            score = scores[position]
            metrics.update({k: float(v) for k, v in score.metrics.items()})
            detail.update(score.detail)
            embedding = score.embedding or embedding
        merged.append(ClipScores(metrics, detail, embedding))
    return merged


def unit_centroid(vectors: Sequence[np.ndarray] | np.ndarray) -> np.ndarray | None:
    """The mean of ``vectors`` scaled to unit length (None for no vectors; a zero mean as is)."""
    if len(vectors) == 0:
        return None
    mean = np.mean(vectors, axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else mean
