"""Verifiers: score batches of candidate clips (ASR, speaker, emotion, signal) behind one protocol.

Each verifier has an options dataclass and a ``load_*`` function that loads its model once; the
loaded verifier's ``score(clips)`` scores a whole batch in one call and returns plain metrics
(see :mod:`verifiers.base`), which the selection policy turns into gates and rankings. Model
libraries are imported when a verifier is loaded, not when this package is. Note: ``verifiers``
is also the import name of an unrelated reinforcement-learning library on PyPI; installing both
in one environment makes one shadow the other, so keep them in separate environments.
"""

from __future__ import annotations

from verifiers.base import (
    Clip,
    HasOptions,
    LabelChecker,
    MayBeUnavailable,
    Reconfigurable,
    ReferenceComparer,
    Score,
    ShortClipJudge,
    SpeakerEmbedder,
    Verifier,
)
from verifiers.duration_fit import (
    DurationFitOptions,
    DurationFitVerifier,
    load_duration_fit_verifier,
    speech_bounds,
)
from verifiers.emotion import (
    EMOTION_UNAVAILABLE_REASON,
    EmotionOptions,
    EmotionVerifier,
    UnavailableEmotionVerifier,
    load_emotion_verifier,
)
from verifiers.registry import DEFAULT_VERIFIERS, VERIFIERS, VerifierKind
from verifiers.signal import (
    SignalOptions,
    SignalVerifier,
    expected_duration_s,
    expected_reading_s,
    load_signal_verifier,
)
from verifiers.speaker import SpeakerOptions, SpeakerVerifier, load_speaker_verifier
from verifiers.textnorm import normalize, word_error_rate
from verifiers.wer import WerOptions, WerVerifier, load_wer_verifier

__all__ = [
    "DEFAULT_VERIFIERS",
    "VERIFIERS",
    "VerifierKind",
    "EMOTION_UNAVAILABLE_REASON",
    "Clip",
    "DurationFitOptions",
    "DurationFitVerifier",
    "EmotionOptions",
    "EmotionVerifier",
    "HasOptions",
    "LabelChecker",
    "MayBeUnavailable",
    "Reconfigurable",
    "ReferenceComparer",
    "Score",
    "SignalOptions",
    "SignalVerifier",
    "ShortClipJudge",
    "SpeakerEmbedder",
    "SpeakerOptions",
    "SpeakerVerifier",
    "UnavailableEmotionVerifier",
    "Verifier",
    "WerOptions",
    "WerVerifier",
    "expected_duration_s",
    "expected_reading_s",
    "load_duration_fit_verifier",
    "load_emotion_verifier",
    "load_signal_verifier",
    "load_speaker_verifier",
    "load_wer_verifier",
    "normalize",
    "speech_bounds",
    "word_error_rate",
]
