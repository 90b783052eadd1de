"""Duration fit: how well a candidate's speech fills the slot of the dubbing cue it voices.

For every clip that carries a slot (``clip.target_duration_s``, the seconds between the cue's start
and the end of its slot), the speech is measured after trimming its edge silence exactly as the
dubbing placement trims it (:func:`speech_bounds`, shared by both so the verifier judges what will
be placed), and two metrics are reported: ``stretch``, the speech seconds over the slot seconds
(above 1 the clip must be sped up to fit; the selection policy gates it at the speed limit), and
``duration_fit``, a score in [0, 1] for the weighted ranking: 1 for a natural fit (speech filling
between ``fill_low`` of the slot and all of it), falling steeply as a clip needs squeezing and
gently as it leaves more of its slot empty, so among candidates that pass the gates the one that
fits without time-stretching wins. Clips without a slot (book utterances) get no metrics, so the
verifier never touches a book's gates or scores. Pure numpy, no model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from verified_tts.options.verifiers import DurationFitOptions
from verifiers.base import Clip, Score
from verifiers.signal import scoring_options

__all__ = [
    "METRICS",
    "DurationFitOptions",
    "DurationFitVerifier",
    "fit_score",
    "load_duration_fit_verifier",
    "speech_bounds",
]


METRICS = ("stretch", "duration_fit")  # reported for clips that carry a slot


def speech_bounds(
    audio: np.ndarray,
    sample_rate: int,
    *,
    threshold_dbfs: float = -45.0,
    keep_edge_s: float = 0.05,
) -> tuple[int, int]:
    """Sample range [start, end) of the speech: 10 ms frames above the threshold, plus an edge.

    An all-silent clip keeps its whole length (there is nothing better to place).
    """
    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    frame = max(1, int(sample_rate) // 100)
    count = audio.size // frame
    if count == 0:
        return 0, audio.size
    frames = audio[: count * frame].astype(np.float64).reshape(count, frame)
    level = 20 * np.log10(np.sqrt(np.mean(frames**2, axis=1)) + 1e-10)
    voiced = np.flatnonzero(level > threshold_dbfs)
    if voiced.size == 0:
        return 0, audio.size
    keep = int(keep_edge_s * sample_rate)
    start = max(0, int(voiced[0]) * frame - keep)
    end = min(audio.size, (int(voiced[-1]) + 1) * frame + keep)
    return start, end


def fit_score(stretch: float, options: DurationFitOptions | None = None) -> float:
    """The ranking score in [0, 1] for a clip that needs ``stretch`` (speech / slot)."""
    options = options or DurationFitOptions()
    if stretch > 1.0:
        return max(0.0, 1.0 - options.over_slope * (stretch - 1.0))
    if stretch >= options.fill_low or options.fill_low <= 0:
        return 1.0
    return 1.0 - options.under_penalty * (options.fill_low - stretch) / options.fill_low


class DurationFitVerifier:
    """Scores a batch of clips against their slots; see the module docstring."""

    name = "duration_fit"
    reads_references = False  # its scores are the same whatever the speaker reference

    def __init__(self, options: DurationFitOptions | None = None) -> None:
        self.options = options or DurationFitOptions()

    def identity(self) -> Mapping[str, Any]:
        return {"verifier": self.name, "version": 1, "options": scoring_options(self.options)}

    def score(self, clips: Sequence[Clip]) -> list[Score]:
        return [self._score_one(clip) for clip in clips]

    def _score_one(self, clip: Clip) -> Score:
        slot = clip.target_duration_s
        if not slot or slot <= 0:
            return Score(metrics={})
        start, end = speech_bounds(
            clip.audio,
            clip.sample_rate,
            threshold_dbfs=self.options.silence_threshold_dbfs,
            keep_edge_s=self.options.keep_edge_s,
        )
        speech = (end - start) / clip.sample_rate
        stretch = speech / slot
        return Score(
            metrics={"stretch": float(stretch), "duration_fit": fit_score(stretch, self.options)},
            detail={"speech_s": round(speech, 3), "slot_s": round(float(slot), 3)},
        )


def load_duration_fit_verifier(options: DurationFitOptions | None = None) -> DurationFitVerifier:
    """Build the verifier (nothing to load; here for symmetry with the other verifiers)."""
    return DurationFitVerifier(options)
