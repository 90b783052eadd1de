"""The duration_fit verifier: stretch and fit score against a dubbing slot, and its registration."""

from __future__ import annotations

import numpy as np
import pytest

from verified_tts.config import build_config
from verified_tts.errors import UserError
from verified_tts.selection.policy import Gate, SelectionPolicy, choose, judge
from verified_tts.verification import load_verifiers
from verifiers import VERIFIERS as VERIFIER_NAMES
from verifiers import Clip, DurationFitOptions, DurationFitVerifier, speech_bounds
from verifiers.duration_fit import fit_score

RATE = 16000


def tone(seconds: float, lead: float = 0.0, tail: float = 0.0) -> np.ndarray:
    """A 200 Hz tone of ``seconds`` between stretches of silence."""
    t = np.arange(round(seconds * RATE)) / RATE
    body = (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)
    return np.concatenate(
        [np.zeros(round(lead * RATE), np.float32), body, np.zeros(round(tail * RATE), np.float32)]
    )


def clip(audio: np.ndarray, slot: float | None) -> Clip:
    return Clip(audio=audio, sample_rate=RATE, text="a line", target_duration_s=slot)


def test_stretch_is_speech_without_edge_silence_over_slot():
    verifier = DurationFitVerifier()
    scores = verifier.score(
        [clip(tone(2.0, lead=0.5, tail=0.7), 2.0), clip(tone(2.5), 2.0), clip(tone(1.0), 2.0)]
    )
    # 50 ms of edge is kept on each side of the speech, as the placement keeps it
    assert scores[0].metrics["stretch"] == pytest.approx(2.1 / 2.0, abs=0.01)
    assert scores[1].metrics["stretch"] == pytest.approx(1.25, abs=0.01)
    assert scores[2].metrics["stretch"] == pytest.approx(0.5, abs=0.01)
    assert scores[0].detail["slot_s"] == 2.0


def test_fit_score_prefers_a_natural_fit_over_squeezing_or_emptiness():
    assert fit_score(0.8) == fit_score(1.0) == 1.0
    assert fit_score(1.1) > fit_score(1.25) > fit_score(1.39) > fit_score(1.5) == 0.0
    assert 1.0 > fit_score(0.4) > fit_score(0.1) >= 0.5
    # squeezing costs more than leaving the same share of the slot empty
    assert fit_score(1.2) < fit_score(0.4)
    assert all(0.0 <= fit_score(s) <= 1.0 for s in np.linspace(0, 3, 61))


def test_clips_without_a_slot_get_no_metrics():
    assert DurationFitVerifier().score([clip(tone(1.0), None)])[0].metrics == {}


def test_silent_clip_and_short_clip_are_measured_whole():
    assert speech_bounds(np.zeros(RATE, np.float32), RATE) == (0, RATE)
    assert speech_bounds(np.ones(10, np.float32), RATE) == (0, 10)


def test_stretch_gate_and_weight_pick_the_candidate_that_fits():
    verifier = DurationFitVerifier()
    metrics = [
        s.metrics
        for s in verifier.score(
            [clip(tone(2.9), 2.0), clip(tone(2.3), 2.0), clip(tone(1.7), 2.0), clip(tone(0.5), 2.0)]
        )
    ]
    policy = SelectionPolicy(gates=(Gate("stretch", max=1.25, margin=0.25),))
    judgements = [judge(m, policy) for m in metrics]
    assert [j.passed for j in judgements] == [False, True, True, True]
    assert [j.passed_with_margin for j in judgements] == [False, False, True, True]
    assert choose(judgements) == (2, False)  # fits without stretch, fills the slot best
    assert choose(judgements[:1]) == (0, True)  # nothing fits: keep it and flag


def test_registered_as_a_verifier_with_options_from_config():
    assert "duration_fit" in VERIFIER_NAMES
    config = build_config({"verifiers": {"duration_fit": {"fill_low": 0.5}}})
    loaded = load_verifiers(config.verifiers, order=("duration_fit",))
    verifier = loaded.get("duration_fit")
    assert isinstance(verifier, DurationFitVerifier)
    assert verifier.options == DurationFitOptions(fill_low=0.5)
    assert loaded.status["duration_fit"]["available"]
    with pytest.raises(UserError, match=r"unknown key\(s\) in \[verifiers.duration_fit\]"):
        load_verifiers({"duration_fit": {"bogus": 1}}, order=("duration_fit",))
    off = load_verifiers({"duration_fit": {"enabled": False}}, order=("duration_fit",))
    assert off.active == () and not off.status["duration_fit"]["available"]
