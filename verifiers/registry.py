"""The list of verifiers: each name with its options type, its loader and the metrics it reports.

Everything that needs to know which verifiers exist (the config's ``[verifiers.*]`` tables, the
local loader in :mod:`verified_tts.verification`, the Ray backend's actor pools, the check that
every gate and weight names a metric some verifier reports) reads this one mapping, so a new
verifier is added here (and its options type in :mod:`verified_tts.options.verifiers`) and nowhere
else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from verified_tts.options.verifiers import (
    DurationFitOptions,
    EmotionOptions,
    SignalOptions,
    SpeakerOptions,
    StandInVerifierOptions,
    WerOptions,
)
from verified_tts.testing import standin
from verified_tts.testing.standin import load_standin_verifier
from verifiers import duration_fit, emotion, signal, speaker, wer
from verifiers.base import Verifier
from verifiers.duration_fit import load_duration_fit_verifier
from verifiers.emotion import load_emotion_verifier
from verifiers.signal import load_signal_verifier
from verifiers.speaker import load_speaker_verifier
from verifiers.wer import load_wer_verifier

__all__ = ["DEFAULT_VERIFIERS", "TAKE_METRICS", "VERIFIERS", "VerifierKind", "known_metrics"]


@dataclass(frozen=True)
class VerifierKind:
    """A verifier's options type, its loader, the metrics it reports, and whether every render
    runs it."""

    options: type
    load: Callable[[Any], Verifier]
    metrics: tuple[str, ...]
    default: bool = True  # False: only a workflow that asks for it runs it (dubbing's fit)


VERIFIERS: Mapping[str, VerifierKind] = {
    "signal": VerifierKind(SignalOptions, load_signal_verifier, signal.METRICS),
    "wer": VerifierKind(WerOptions, load_wer_verifier, wer.METRICS),
    "speaker": VerifierKind(SpeakerOptions, load_speaker_verifier, speaker.METRICS),
    "emotion": VerifierKind(EmotionOptions, load_emotion_verifier, emotion.METRICS),
    "duration_fit": VerifierKind(
        DurationFitOptions, load_duration_fit_verifier, duration_fit.METRICS, default=False
    ),
    # a stand-in with a fixed cost per clip, for measuring the driver
    # (benchmarks/distributed/driver_ceiling.py)
    "standin": VerifierKind(
        StandInVerifierOptions, load_standin_verifier, standin.METRICS, default=False
    ),
}

# the verifiers a render scores with, in this order (cheap signal checks first)
DEFAULT_VERIFIERS: tuple[str, ...] = tuple(n for n, kind in VERIFIERS.items() if kind.default)


# metrics made from a sentence's takes together rather than by one verifier
# (verified_tts.selection.consensus.TAKE_METRIC, SPEAKER_TAKE_METRIC)
TAKE_METRICS: tuple[str, ...] = ("asr_min_take_logprob", "speaker_take")


def known_metrics() -> frozenset[str]:
    """Every metric some verifier reports, and those made from a sentence's takes: what a gate
    or a ranking weight may name."""
    reported = {name for kind in VERIFIERS.values() for name in kind.metrics}
    return frozenset(reported | set(TAKE_METRICS))
