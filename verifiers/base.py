"""The verifier protocol: what a verifier receives, what it returns, and how it says it is off.

A verifier scores a *batch* of candidate clips at once (never one clip per call) and returns one
:class:`Score` per clip, in order. Scores are plain named metrics; the selection policy in
``verified_tts.selection`` turns metrics into pass/fail gates and a weighted ranking, so a verifier
never decides anything by itself. Per-clip context (the text it should say, its target emotion,
the speaker reference to compare against) travels on the :class:`Clip`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Clip", "Score", "Verifier"]


@dataclass(frozen=True, eq=False)
class Clip:
    """One candidate's audio plus what the verifiers need to judge it."""

    audio: np.ndarray  # float32 mono in [-1, 1]
    sample_rate: int
    text: str  # the text as written (what a listener should hear)
    spoken: str = ""  # the normalised text the generator was given
    emotion: str | None = None  # target emotion label, if the utterance carries one
    speaker_reference: np.ndarray | None = None  # unit-norm embedding to compare against
    # for clips too short for ``speaker_reference``: the same voice's other short takes
    short_reference: np.ndarray | None = None
    target_duration_s: float | None = None  # the slot a dubbed line must fit, when there is one
    info: Mapping[str, Any] = field(default_factory=dict)  # generator diagnostics

    @property
    def duration_s(self) -> float:
        return float(len(self.audio)) / float(self.sample_rate)


@dataclass(frozen=True)
class Score:
    """One verifier's verdict on one clip: named numeric metrics and JSON-able detail."""

    metrics: Mapping[str, float]
    detail: Mapping[str, Any] = field(default_factory=dict)
    embedding: tuple[float, ...] | None = None  # speaker embedding, kept for the voice centroid


@runtime_checkable
class Verifier(Protocol):
    """Scores a batch of clips. ``identity`` enters the store's cache key for its scores."""

    name: str

    def identity(self) -> Mapping[str, Any]: ...

    def score(self, clips: Sequence[Clip]) -> list[Score]: ...
