"""Scoring clips with a set of verifiers, and the speaker reference they are scored against.

:func:`score_clips` runs verifiers over a batch: every verifier gets the same list of clips in one
call (so a Ray backend can fan one upload out to every pool), and the scores of one clip are
merged into one :class:`ClipScores` (metrics and detail of every verifier, the speaker embedding
when one verifier gives it). A render, a beam search's partial scoring and calibration all score
through it. :func:`measure_clips` and :func:`finish_scores` are the same in two steps, the first
without the speaker references (:func:`scores_ahead` says whether the verifiers allow it): a
render scores the next window's first takes while the current window, whose winners make that
window's reference, is still being decided. :func:`unit_centroid` is the voice a set of speaker
embeddings agrees on: their mean, scaled to unit length, which a render uses as the reference
where the user gave none.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from verifiers import Clip, ReferenceComparer, Score, Verifier

__all__ = [
    "ClipScores",
    "finish_scores",
    "measure_clips",
    "score_clips",
    "scores_ahead",
    "unit_centroid",
]


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
    return finish_scores(verifiers, clips, measure_clips(verifiers, clips, timer=timer))


def scores_ahead(verifiers: Sequence[Verifier]) -> bool:
    """Whether these verifiers can score clips before their speaker references are known: each
    reads no reference (``reads_references = False``) or compares with it last
    (:class:`~verifiers.base.ReferenceComparer`)."""
    return all(
        isinstance(v, ReferenceComparer) or getattr(v, "reads_references", True) is False
        for v in verifiers
    )


def measure_clips(
    verifiers: Sequence[Verifier],
    clips: Sequence[Clip],
    *,
    timer: Callable[[str], AbstractContextManager[Any]] | None = None,
) -> list[list[Any]]:
    """All of :func:`score_clips` that needs no speaker reference (``clips`` may lack theirs),
    one list per verifier; :func:`finish_scores` completes it (see :func:`scores_ahead`).

    The verifiers run at once, each on its own thread: they share nothing, their models release
    the GIL, and one that keeps a single core busy (the speaker encoder) would otherwise leave
    the others' cores idle until it is done. Each verifier's scores are what it gives alone."""

    def measure(verifier: Verifier) -> list[Any]:
        with timer(verifier.name) if timer is not None else nullcontext():
            if isinstance(verifier, ReferenceComparer):
                return verifier.measure(clips)
            return verifier.score(clips)

    if len(verifiers) < 2 or not clips:
        return [measure(verifier) for verifier in verifiers]
    # named after the thread whose batch they score (the render's, or the prefetch thread's)
    caller = threading.current_thread().name
    with ThreadPoolExecutor(len(verifiers) - 1, thread_name_prefix=f"{caller}-verifier") as pool:
        others = [pool.submit(measure, verifier) for verifier in verifiers[1:]]
        first = measure(verifiers[0])
        return [first, *(future.result() for future in others)]


def finish_scores(
    verifiers: Sequence[Verifier], clips: Sequence[Clip], measured: Sequence[list[Any]]
) -> list[ClipScores]:
    """:func:`score_clips` of ``clips`` (with their references) from :func:`measure_clips` of the
    same audio and texts: the same values."""
    per_verifier = [
        verifier.compare(clips, done) if isinstance(verifier, ReferenceComparer) else done
        for verifier, done in zip(verifiers, measured, strict=True)
    ]
    return _merged(per_verifier, len(clips))


def _merged(per_verifier: Sequence[Sequence[Score]], count: int) -> list[ClipScores]:
    merged = []
    for position in range(count):
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
