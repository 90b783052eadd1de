"""The generator protocol: sampled synthesis requests in, candidate clips out.

A generator turns a batch of :class:`SynthesisRequest` (one per candidate: text, voice, emotion
and that candidate's seed) into :class:`Candidate` audio, in order. The same request must always
give the same audio, so a seed fully identifies a candidate. ``identity()`` names everything that
changes the audio (generator, model, sampling parameters); it enters the content address of every
utterance, so changing any of it re-renders instead of reusing stale audio.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Candidate", "Generator", "SynthesisRequest"]


@dataclass(frozen=True)
class SynthesisRequest:
    """One candidate to sample: the utterance's spoken text and the candidate's seed."""

    utterance_key: str
    index: int  # candidate index k within its utterance
    seed: int
    text: str  # normalised text to speak
    voice: str | None = None
    emotion: str | None = None
    # Lexicon phonemes: (word as it appears in ``text``, espeak-ng IPA). A generator that takes
    # phonemes phonemizes ``text`` and puts these in place of each word's own phonemes; the
    # others read ``text`` as it is.
    phonemes: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, eq=False)
class Candidate:
    """Sampled audio for one request, plus generator diagnostics (JSON-able)."""

    utterance_key: str
    index: int
    seed: int
    audio: np.ndarray  # float32 mono in [-1, 1]
    sample_rate: int
    info: Mapping[str, Any] = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        return float(len(self.audio)) / float(self.sample_rate)


@runtime_checkable
class Generator(Protocol):
    """Samples candidates. Loading happens in the constructor or a ``load`` function, never here."""

    name: str
    model: str
    sample_rate: int

    def identity(self) -> Mapping[str, Any]: ...

    def sample(self, requests: Sequence[SynthesisRequest]) -> list[Candidate]: ...
