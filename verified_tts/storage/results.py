"""What a render works on and what it produces: utterances, candidates, results, run counters.

An :class:`Utterance` is one segment of the input under its content address;
:meth:`Utterance.request` is how every part of the program asks the generator for one of its
candidates (text, voice, emotion, lexicon phonemes and that candidate's seed), so no caller can
leave a field out. A
:class:`CandidateResult` is one scored candidate; :meth:`CandidateResult.to_record` and
:meth:`CandidateResult.from_record` are the one conversion each way between it and the store's
decision records (keys ``metrics`` and ``failed``; the published manifest names them ``scores``
and ``failed_gates``, see :mod:`verified_tts.output.manifest`). :class:`RunStats` counts what a run
did and times its stages.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from verified_tts.generators.base import SynthesisRequest
from verified_tts.selection.policy import Judgement, SelectionPolicy, judge
from verified_tts.storage.keys import candidate_key, candidate_seed
from verified_tts.storage.store import Decision
from verified_tts.text.book import Segment
from verified_tts.text.readings import LineReading

__all__ = ["CandidateResult", "RunStats", "Utterance", "UtteranceResult"]


@dataclass(frozen=True)
class Utterance:
    """One segment of the input with its content address.

    A line read in several ways (``readings``: pronunciation or text-form candidates, the first
    the line as the book says it) takes its readings in turn: take k is candidate k div R of
    reading k mod R, keyed and seeded by that reading's own key
    (:mod:`verified_tts.storage.keys`)."""

    key: str
    segment: Segment
    voice: str | None = None
    target_duration_s: float | None = None  # dubbing: the seconds the line should fill
    readings: tuple[LineReading, ...] = ()

    @property
    def text(self) -> str:
        return self.segment.text

    def take(self, index: int) -> tuple[LineReading | None, str, int]:
        """(reading, the key its takes are stored under, its candidate number) of take
        ``index``; a line read one way is its own reading."""
        if not self.readings:
            return None, self.key, index
        reading = self.readings[index % len(self.readings)]
        return reading, reading.key, index // len(self.readings)

    def take_key(self, index: int) -> str:
        """The store key of take ``index``."""
        _, key, number = self.take(index)
        return candidate_key(key, number)

    def request(self, index: int, *, seed: int | None = None) -> SynthesisRequest:
        """Candidate ``index`` of this utterance as the generator gets it; its seed is
        :func:`~verified_tts.storage.keys.candidate_seed` unless ``seed`` is given (a beam search's
        continuations carry their own)."""
        reading, key, number = self.take(index)
        return SynthesisRequest(
            utterance_key=key,
            index=number,
            seed=candidate_seed(key, number) if seed is None else seed,
            text=self.segment.spoken if reading is None else reading.spoken,
            voice=self.voice,
            emotion=self.segment.emotion,
            phonemes=self.segment.phonemes if reading is None else reading.phonemes,
        )


@dataclass(frozen=True)
class CandidateResult:
    """One candidate as the manifest shows it."""

    index: int
    seed: int
    key: str
    duration_s: float
    metrics: Mapping[str, float]
    detail: Mapping[str, Any]
    passed: bool
    failed: tuple[str, ...]
    score: float
    audio: str | None  # path relative to the store root, when kept
    info: Mapping[str, Any] = field(default_factory=dict)

    def judgement(self, policy: SelectionPolicy) -> Judgement:
        return judge(self.metrics, policy)

    def without_audio(self) -> CandidateResult:
        return replace(self, audio=None)

    def to_record(self) -> dict[str, Any]:
        """The candidate as a stored decision keeps it."""
        return {
            "index": self.index,
            "seed": self.seed,
            "key": self.key,
            "duration_s": self.duration_s,
            "metrics": dict(self.metrics),
            "detail": dict(self.detail),
            "passed": self.passed,
            "failed": list(self.failed),
            "score": self.score,
            "audio": self.audio,
            "info": dict(self.info),
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> CandidateResult:
        return cls(
            index=record["index"],
            seed=record["seed"],
            key=record["key"],
            duration_s=record["duration_s"],
            metrics=record["metrics"],
            detail=record["detail"],
            passed=record["passed"],
            failed=tuple(record["failed"]),
            score=record["score"],
            audio=record["audio"],
            info=record["info"],
        )


@dataclass(frozen=True)
class UtteranceResult:
    utterance: Utterance
    candidates: tuple[CandidateResult, ...]
    winner: int
    flagged: bool
    reused: bool  # decided by an earlier run and taken from the store
    embedding: tuple[float, ...] | None = None  # the winner's speaker embedding

    @property
    def winner_candidate(self) -> CandidateResult:
        return self.candidates[self.winner]

    def decision(self, policy_id: str) -> Decision:
        """This result as the store keeps it under ``policy_id``."""
        return Decision(
            self.utterance.key,
            policy_id,
            self.winner,
            self.flagged,
            {
                "candidates": [c.to_record() for c in self.candidates],
                "embedding": list(self.embedding) if self.embedding else None,
            },
        )

    @classmethod
    def from_decision(cls, utterance: Utterance, decision: Decision) -> UtteranceResult:
        """An earlier run's stored decision for ``utterance``."""
        embedding = decision.record.get("embedding")
        return cls(
            utterance,
            tuple(CandidateResult.from_record(c) for c in decision.record["candidates"]),
            decision.winner,
            decision.flagged,
            reused=True,
            embedding=tuple(embedding) if embedding else None,
        )


@dataclass
class RunStats:
    """Counters and seconds per stage for this run (not for what the store already held)."""

    candidates_generated: int = 0
    candidates_reused: int = 0
    utterances_reused: int = 0
    audio_seconds_generated: float = 0.0
    audio_seconds_verified: float = 0.0
    tokens_generated: int = 0  # codec tokens the generator produced (0 for non-token models)
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    counted: set[str] = field(default_factory=set, repr=False)  # candidate keys counted above
    # where the work ran, asked when the stats are written (the Ray backend: nodes and actors)
    backend: Callable[[], Mapping[str, Any]] | None = None

    def as_dict(self) -> dict[str, Any]:
        stats = {
            "candidates_generated": self.candidates_generated,
            "candidates_reused": self.candidates_reused,
            "utterances_reused": self.utterances_reused,
            "audio_seconds_generated": round(self.audio_seconds_generated, 3),
            "audio_seconds_verified": round(self.audio_seconds_verified, 3),
            "tokens_generated": self.tokens_generated,
            "seconds": {stage: round(s, 3) for stage, s in self.seconds.items()},
        }
        if self.backend is not None:
            stats["backend"] = dict(self.backend())
        return stats

    def merge(self, other: RunStats) -> None:
        """Add ``other``'s counts and seconds to these (a run made of several passes)."""
        self.candidates_generated += other.candidates_generated
        self.candidates_reused += other.candidates_reused
        self.utterances_reused += other.utterances_reused
        self.audio_seconds_generated += other.audio_seconds_generated
        self.audio_seconds_verified += other.audio_seconds_verified
        self.tokens_generated += other.tokens_generated
        for stage, seconds in other.seconds.items():
            self.seconds[stage] += seconds
        self.backend = self.backend or other.backend

    @contextmanager
    def timer(self, stage: str) -> Iterator[None]:
        """Add the seconds the ``with`` block takes to ``stage``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] += time.perf_counter() - start
