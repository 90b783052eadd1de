"""Calibration scores each case as a render would hold it: the same references and expectations.

Two things a render settles from what it has already made, which a calibration settles from its
clean takes: the speaker reference (the centroid of the clean takes, and for a clip too short for
it the centroid of the other utterances' short clean takes, :func:`speaker_metric`), and, for a
voice that gives no length of its own, the text's duration model that the duration gates are
measured against (:func:`fit_text_model`, written into ``gates.toml`` as ``[verifiers.signal]``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from verified_tts.calibration.analysis import Case
from verifiers.duration_model import FEATURES, fit

__all__ = ["fit_text_model", "speaker_metric"]

_FRAME_S = 0.02  # the signal verifier's floor of an expected length (one 20 ms frame)


def speaker_metric(
    cases: Sequence[Case],
    embeddings: Sequence[np.ndarray | None],
    speech: Sequence[float | None],
    speaker: Any,
) -> None:
    """The speaker metric as a render settles it: against the clean takes' centroid, and for a
    clip too short for it against the other utterances' short clean takes (no metric, as "too
    short to judge the voice", with fewer than the render's minimum of them)."""
    from verified_tts.pipeline import MIN_SHORT_TAKES

    def unit(vectors: Sequence[np.ndarray]) -> np.ndarray:
        mean = np.mean(vectors, axis=0)
        return mean / (np.linalg.norm(mean) or 1.0)

    def short(seconds: float | None) -> bool:
        return seconds is not None and hasattr(speaker, "is_short") and speaker.is_short(seconds)

    clean = [(c, e, s) for c, e, s in zip(cases, embeddings, speech, strict=True)
             if c.kind == "clean" and e is not None]  # fmt: skip
    if not clean:
        return
    reference = unit([e for _, e, _ in clean])
    for case, embedding, seconds in zip(cases, embeddings, speech, strict=True):
        if embedding is None:
            continue
        against = reference
        if short(seconds):
            takes = [e for c, e, s in clean if c.utterance != case.utterance and short(s)]
            against = unit(takes) if len(takes) >= MIN_SHORT_TAKES else None
        case.metrics.pop("speaker", None)
        if against is not None:  # both unit vectors: the dot product is the cosine
            case.metrics["speaker"] = float(np.dot(against, embedding))


def fit_text_model(
    cases: Sequence[Case], details: Sequence[Mapping[str, Any]], utterances: Sequence[Any]
) -> dict[str, Any] | None:
    """For a voice that gives no length of its own: fit the text's duration model on the clean
    takes (:func:`verifiers.duration_model.fit`) and hold every case to it, so the duration gates
    are calibrated on the expectation a render with the written ``[verifiers.signal]`` options
    will use. None when the voice predicts its own lengths (nothing to fit)."""
    if not details or any(d.get("expected_from") != "text" for d in details):
        return None
    clean = [c for c in cases if c.kind == "clean" and "duration_s" in c.metrics]
    if len(clean) < len(FEATURES):
        return None
    spoken = [utterances[c.utterance].segment.spoken for c in clean]
    model = fit(spoken, [c.metrics["duration_s"] for c in clean])
    before = [
        math.log(c.metrics["duration_ratio"]) for c in clean if c.metrics["duration_ratio"] > 0
    ]
    for case, detail in zip(cases, details, strict=True):
        if "duration_s" not in case.metrics:
            continue
        expected = max(model.seconds(utterances[case.utterance].segment.spoken), _FRAME_S)
        case.metrics["duration_ratio"] = case.metrics["duration_s"] / expected
        if "speech_s" in detail:
            case.metrics["speech_ratio"] = float(detail["speech_s"]) / expected
    after = [
        math.log(c.metrics["duration_ratio"]) for c in clean if c.metrics["duration_ratio"] > 0
    ]
    return {
        "options": model.as_options(),
        "clean_log_ratio_sd": {
            "letters": round(float(np.std(before)), 4) if before else None,
            "fitted": round(float(np.std(after)), 4) if after else None,
        },
    }
