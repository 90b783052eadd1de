"""The verifier protocol: what a verifier receives, what it returns, and how it says it is off.

A verifier scores a *batch* of candidate clips at once (never one clip per call) and returns one
:class:`Score` per clip, in order. Scores are plain named metrics; the selection policy in
``verified_tts.selection.policy`` turns metrics into pass/fail gates and a weighted ranking, so a
verifier never decides anything by itself. Per-clip context (the text it should say, its target
emotion, the speaker reference to compare against) travels on the :class:`Clip`.

What some verifiers can do besides scoring is declared by small optional protocols, which the
Ray backend's proxies implement too: :class:`SpeakerEmbedder` (embeds clips and a reference
recording), :class:`LabelChecker` (its targets are its model's labels, checked before any work),
:class:`HasOptions` (keeps the options it was built with), :class:`Reconfigurable` (the same loaded
model under other options: the WER verifier's per-clip hearing of a packed render's takes),
:class:`MayBeUnavailable` (has nothing to run, e.g. no model configured, and says why) and
:class:`ReferenceComparer` (does its heavy work without the clip's speaker references and compares
with them after, so a render can score a window before its reference is known).
:class:`ShortClipJudge` (says how much speech a clip holds and whether that is too little for a
long reference) only the local speaker verifier implements: under Ray a short clip gets the note
"too short to judge the voice".
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "Clip",
    "HasOptions",
    "LabelChecker",
    "MayBeUnavailable",
    "Reconfigurable",
    "ReferenceComparer",
    "Score",
    "ShortClipJudge",
    "SpeakerEmbedder",
    "Verifier",
]


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


@runtime_checkable
class ReferenceComparer(Protocol):
    """A verifier whose scores depend on the clips' speaker references only through a last,
    cheap comparison (the speaker verifier): ``measure`` does the rest, without the references,
    and ``compare(clips, measure(clips))`` is ``score(clips)``, value for value. A verifier that
    reads no reference at all says so with ``reads_references = False``; a render scores ahead
    only where every verifier is one or the other (:meth:`RenderContext.score_ahead`)."""

    def measure(self, clips: Sequence[Clip]) -> list[Any]: ...

    def compare(self, clips: Sequence[Clip], measured: Sequence[Any]) -> list[Score]: ...


@runtime_checkable
class ShortClipJudge(Protocol):
    """A speaker verifier that judges a clip with too little speech for a long reference
    against the voice's short takes: the pipeline keeps that short-take reference from these."""

    def embed_with_speech(self, clips: Sequence[Clip]) -> tuple[np.ndarray, list[float]]: ...

    def is_short(self, speech_s: float) -> bool: ...


@runtime_checkable
class SpeakerEmbedder(Protocol):
    """A verifier that embeds clips and a user's reference recording (the speaker verifier): the
    pipeline's voice reference is made from these embeddings."""

    def embed(self, clips: Sequence[Clip]) -> np.ndarray: ...

    def embed_file(self, path: str | os.PathLike[str]) -> np.ndarray: ...


@runtime_checkable
class LabelChecker(Protocol):
    """A verifier whose targets are its model's labels (the emotion verifier): a target it has
    no label for is a :class:`~verified_tts.errors.UserError` before any work is done."""

    def resolve_label(self, label: str) -> list[int]: ...


@runtime_checkable
class HasOptions(Protocol):
    """A verifier that keeps the options dataclass it was built with."""

    options: Any


@runtime_checkable
class Reconfigurable(Protocol):
    """A verifier that can score under other options with the model it has loaded (the WER
    verifier's decoding options: ``packing``, ``beam_size``), without loading it again."""

    options: Any

    def with_options(self, **changes: Any) -> Verifier: ...


@runtime_checkable
class MayBeUnavailable(Protocol):
    """A verifier that may have nothing to run; ``unavailable_reason`` says why (None: it runs)."""

    unavailable_reason: str | None
