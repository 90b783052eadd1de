"""The list of verifiers: each name with its options dataclass and its loader, in scoring order.

Everything that needs to know which verifiers exist (the config's ``[verifiers.*]`` tables, the
local loader in :mod:`verified_tts.verification`, the Ray backend's actor pools) reads this one
mapping, so a new verifier is added here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from verified_tts.testing.standin import StandInVerifierOptions, load_standin_verifier
from verifiers.base import Verifier
from verifiers.duration_fit import DurationFitOptions, load_duration_fit_verifier
from verifiers.emotion import EmotionOptions, load_emotion_verifier
from verifiers.signal import SignalOptions, load_signal_verifier
from verifiers.speaker import SpeakerOptions, load_speaker_verifier
from verifiers.wer import WerOptions, load_wer_verifier

__all__ = ["DEFAULT_VERIFIERS", "VERIFIERS", "VerifierKind"]


@dataclass(frozen=True)
class VerifierKind:
    """A verifier's options type, its loader, and whether every render runs it."""

    options: type
    load: Callable[[Any], Verifier]
    default: bool = True  # False: only a workflow that asks for it runs it (dubbing's fit)


VERIFIERS: Mapping[str, VerifierKind] = {
    "signal": VerifierKind(SignalOptions, load_signal_verifier),
    "wer": VerifierKind(WerOptions, load_wer_verifier),
    "speaker": VerifierKind(SpeakerOptions, load_speaker_verifier),
    "emotion": VerifierKind(EmotionOptions, load_emotion_verifier),
    "duration_fit": VerifierKind(DurationFitOptions, load_duration_fit_verifier, default=False),
    # a stand-in with a fixed cost per clip, for measuring the driver (benchmarks/driver_ceiling.py)
    "standin": VerifierKind(StandInVerifierOptions, load_standin_verifier, default=False),
}

# the verifiers a render scores with, in this order (cheap signal checks first)
DEFAULT_VERIFIERS: tuple[str, ...] = tuple(n for n, kind in VERIFIERS.items() if kind.default)
