"""The seam between the render loop and the ways of choosing a winner: one protocol, one context.

The pipeline (:class:`~verified_tts.pipeline.Synthesizer`) walks the book window by window, takes
what the store already decided, and hands the rest of each window to a :class:`Strategy`:
best-of-N (:mod:`verified_tts.selection.best_of_n`) or beam search
(:mod:`verified_tts.selection.beam_search`). A strategy works only through the
:class:`RenderContext` of the run: :meth:`~RenderContext.sample` (stored candidates, the missing
ones generated in one batch), :meth:`~RenderContext.verify` (scores from the store or from every
verifier in one call each, committed together), :meth:`~RenderContext.decide` (the selection
policy's pick, committed as the decision), the run's :class:`~verified_tts.storage.results.RunStats`
and each voice's speaker reference for the window. So the store's keys, the scores and the decisions
are the same whichever strategy asked for them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Protocol, runtime_checkable

import numpy as np

from verified_tts.generators import Generator, SynthesisRequest
from verified_tts.selection.consensus import judge_all, with_take_metrics
from verified_tts.selection.policy import Judgement, SelectionPolicy, choose, judge
from verified_tts.selection.scoring import finish_scores, measure_clips, score_clips, scores_ahead
from verified_tts.storage.keys import candidate_key, score_context, stable_hash
from verified_tts.storage.results import CandidateResult, RunStats, Utterance, UtteranceResult
from verified_tts.storage.store import Store, StoredCandidate
from verified_tts.verification import LoadedVerifiers
from verifiers import Clip

__all__ = ["ChecksFirst", "RenderContext", "Scored", "Strategy"]

# a scored candidate and its speaker embedding (None without a speaker verifier)
Scored = tuple[CandidateResult, tuple[float, ...] | None]


@runtime_checkable
class Strategy(Protocol):
    """Chooses the winners of a window's undecided utterances through a :class:`RenderContext`.

    ``bootstraps_reference``: whether, without a user's reference, the first window's speaker
    reference is the centroid of its utterances' candidate 0 (best-of-N samples those anyway).
    ``prefetch`` samples ahead what the next window will ask for first (or nothing), on the
    pipeline's prefetch thread, so the engine is busy while this window is being verified.
    """

    name: str
    bootstraps_reference: bool

    def prefetch(self, window: Sequence[Utterance], context: RenderContext) -> None: ...

    def render_window(
        self, pending: Sequence[Utterance], context: RenderContext
    ) -> Iterator[UtteranceResult]: ...


@runtime_checkable
class ChecksFirst(Protocol):
    """A strategy that can refuse a run before any work (one error line, nothing sampled)."""

    def check(self, utterances: Sequence[Utterance], n: int) -> None: ...


@dataclass(frozen=True, eq=False)
class RenderContext:
    """One run's models, store and policy, as a strategy may use them (see the module doc).

    ``n`` is the run's candidates per utterance, ``policy_id`` the key its decisions are stored
    under, ``references`` each voice's speaker reference for the current window (a voice not in
    it falls back to ``voice_reference``, the user's).
    """

    generator: Generator
    verifiers: LoadedVerifiers
    policy: SelectionPolicy
    store: Store
    stats: RunStats
    n: int
    policy_id: str
    keep: str = "all"  # "all" candidates' audio, or "winners" only
    voice_reference: np.ndarray | None = None
    references: Mapping[str | None, np.ndarray | None] = field(default_factory=dict)
    # a voice's own policy and decision key, by the voice setting of its lines (the others: the
    # run's ``policy`` and ``policy_id``)
    policies: Mapping[str | None, tuple[SelectionPolicy, str]] = field(default_factory=dict)
    # each voice's centroid of short takes, for clips too short for ``references``
    short_references: Mapping[str | None, np.ndarray | None] = field(default_factory=dict)
    # the prefetch thread samples the next window while the main thread verifies this one, and
    # a generator engine takes one batch at a time
    lock: threading.Lock = field(default_factory=threading.Lock)
    # what score_ahead measured, by the candidate keys of the batch, until verify uses it
    ahead: dict[tuple[str, ...], list[list[object]]] = field(default_factory=dict)
    ahead_lock: threading.Lock = field(default_factory=threading.Lock)

    def with_references(
        self,
        references: Mapping[str | None, np.ndarray | None],
        short_references: Mapping[str | None, np.ndarray | None] | None = None,
    ) -> RenderContext:
        """The same run, with the speaker references of the next window (sharing the lock)."""
        short = self.short_references if short_references is None else short_references
        return replace(self, references=dict(references), short_references=dict(short))

    def policy_of(self, utterance: Utterance) -> SelectionPolicy:
        """The selection policy ``utterance`` is judged by: its voice's, else the run's."""
        own = self.policies.get(utterance.voice)
        return own[0] if own else self.policy

    def policy_id_of(self, utterance: Utterance) -> str:
        """The key ``utterance``'s decision is stored under (its voice's policy's)."""
        own = self.policies.get(utterance.voice)
        return own[1] if own else self.policy_id

    def take_limit(self, utterance: Utterance) -> int:
        """The takes ``utterance`` can usefully have: N, except where its voice's takes differ
        only in noise (a generator whose ``takes_differ`` is false): one of each of its readings.
        """
        from verified_tts.generators.voice_set import speaking_generator

        if getattr(speaking_generator(self.generator, utterance.voice), "takes_differ", True):
            return self.n
        return min(self.n, max(1, len(utterance.readings)))

    def reference(self, utterance: Utterance) -> np.ndarray | None:
        """The speaker reference ``utterance`` is scored against in this window."""
        return self.references.get(utterance.voice, self.voice_reference)

    def short_reference(self, utterance: Utterance) -> np.ndarray | None:
        """The short-take reference of ``utterance``'s voice in this window (None: not yet)."""
        return self.short_references.get(utterance.voice)

    @cached_property
    def verifier_id(self) -> str:
        return stable_hash(self.verifiers.identity())

    # ------------------------------------------------------------------------------------------
    def sample(self, wanted: Sequence[tuple[Utterance, int]]) -> list[StoredCandidate]:
        """Stored candidates for ``wanted`` (utterance, candidate index), generating the ones not
        yet stored in one batch."""
        with self.lock:
            return self._sample_locked(wanted)

    def _sample_locked(self, wanted: Sequence[tuple[Utterance, int]]) -> list[StoredCandidate]:
        found: dict[int, StoredCandidate] = {}
        requests: list[tuple[int, SynthesisRequest]] = []
        with self.stats.timer("store"):
            for position, (utterance, index) in enumerate(wanted):
                stored = self.store.get_candidate(utterance.take_key(index))
                if stored is not None:
                    found[position] = _as_take(stored, index)
                    self.count_reused([stored.key])
                    continue
                requests.append((position, utterance.request(index)))
        if requests:
            with self.stats.timer("generate"):
                candidates = self.generator.sample([request for _, request in requests])
            with self.stats.timer("store"):
                for (position, request), candidate in zip(requests, candidates, strict=True):
                    found[position] = self.store.put_candidate(
                        candidate_key(request.utterance_key, request.index),
                        utterance=request.utterance_key,
                        index=request.index,
                        seed=request.seed,
                        audio=candidate.audio,
                        sample_rate=candidate.sample_rate,
                        info=candidate.info,
                    )
                    found[position] = _as_take(found[position], wanted[position][1])
                    self.stats.counted.add(found[position].key)
                    self.count_generated(
                        candidate.duration_s, int(candidate.info.get("tokens", 0) or 0)
                    )
        return [found[position] for position in range(len(wanted))]

    def count_reused(self, keys: Sequence[str]) -> None:
        """Count stored candidates this run used that it had not counted yet."""
        fresh = set(keys) - self.stats.counted
        self.stats.candidates_reused += len(fresh)
        self.stats.counted |= fresh

    def count_generated(self, seconds: float, tokens: int = 0) -> None:
        """Count one candidate generated by this run: its audio seconds and codec tokens."""
        self.stats.candidates_generated += 1
        self.stats.audio_seconds_generated += seconds
        self.stats.tokens_generated += tokens

    # ------------------------------------------------------------------------------------------
    def verify(
        self, wanted: Sequence[tuple[Utterance, int]], stored: Sequence[StoredCandidate]
    ) -> list[Scored]:
        """Score one round's candidates: from the store where an earlier run already scored them
        under the same context, else with every verifier (in one call each), committing the new
        scores in one transaction so a resumed run sees the whole round or none of it."""
        speaker_references = [self.reference(utterance) for utterance, _ in wanted]
        short = [self.short_reference(utterance) for utterance, _ in wanted]
        contexts = [
            score_context(
                self.verifier_id,
                reference,
                text=utterance.segment.text,
                spoken=utterance.segment.spoken,
                emotion=utterance.segment.emotion,
                target_duration_s=utterance.target_duration_s,
                short_reference=short_reference,
            )
            for (utterance, _), reference, short_reference in zip(
                wanted, speaker_references, short, strict=True
            )
        ]
        with self.stats.timer("store"):
            records = [
                self.store.get_scores(candidate.key, context)
                for candidate, context in zip(stored, contexts, strict=True)
            ]
        missing = [position for position, record in enumerate(records) if record is None]
        if missing:
            fresh = self._score(
                [wanted[p][0] for p in missing],
                [stored[p] for p in missing],
                [speaker_references[p] for p in missing],
                [short[p] for p in missing],
            )
            for position, record in zip(missing, fresh, strict=True):
                records[position] = record
            with self.stats.timer("store"):
                self.store.put_scores((stored[p].key, contexts[p], records[p]) for p in missing)
        results: list[Scored] = []
        for (utterance, _), candidate, record in zip(wanted, stored, records, strict=True):
            assert record is not None
            judgement = judge(record["metrics"], self.policy_of(utterance))
            reading = utterance.take(candidate.index)[0]
            info = candidate.info if reading is None else {**candidate.info,
                                                           "reading": reading.label()}  # fmt: skip
            result = CandidateResult(
                index=candidate.index,
                seed=candidate.seed,
                key=candidate.key,
                duration_s=round(candidate.duration_s, 3),
                metrics=record["metrics"],
                detail=record["detail"],
                passed=judgement.passed,
                failed=judgement.failed,
                score=judgement.score,
                audio=candidate.audio,
                info=info,
            )
            embedding = None if record["embedding"] is None else tuple(record["embedding"])
            results.append((result, embedding))
        return results

    def _score(
        self,
        utterances: Sequence[Utterance],
        stored: Sequence[StoredCandidate],
        references: Sequence[np.ndarray | None],
        short_references: Sequence[np.ndarray | None],
    ) -> list[dict[str, object]]:
        """Every active verifier on these candidates; one record per candidate in the shape the
        store keeps, so a fresh score and a stored one are the same values."""
        clips = self._clips(utterances, stored, references, short_references)
        with self.ahead_lock:
            measured = self.ahead.pop(tuple(candidate.key for candidate in stored), None)
        if measured is not None:
            scores = finish_scores(self.verifiers.active, clips, measured)
        else:
            scores = score_clips(
                self.verifiers.active, clips, timer=lambda name: self.stats.timer(f"verify:{name}")
            )
        self.stats.audio_seconds_verified += sum(clip.duration_s for clip in clips)
        return [json.loads(json.dumps(score.record())) for score in scores]

    def _clips(
        self,
        utterances: Sequence[Utterance],
        stored: Sequence[StoredCandidate],
        references: Sequence[np.ndarray | None],
        short_references: Sequence[np.ndarray | None],
    ) -> list[Clip]:
        with self.stats.timer("store"):
            return [
                Clip(
                    audio=self.store.load_audio(candidate),
                    sample_rate=candidate.sample_rate,
                    text=utterance.segment.text,
                    spoken=utterance.segment.spoken,
                    emotion=utterance.segment.emotion,
                    speaker_reference=reference,
                    short_reference=short_reference,
                    target_duration_s=utterance.target_duration_s,
                    info=candidate.info,
                )
                for utterance, candidate, reference, short_reference in zip(
                    utterances, stored, references, short_references, strict=True
                )
            ]

    def score_ahead(
        self, wanted: Sequence[tuple[Utterance, int]], stored: Sequence[StoredCandidate]
    ) -> None:
        """Do the reference-free part of scoring ``wanted`` now (the prefetch thread, while the
        current window's later rounds leave a core idle), for :meth:`verify` to finish once the
        window's speaker reference is known. Used only if verify scores exactly this batch (a
        packed Whisper window's scores depend on its neighbours), so the scores are the ones
        verify would give by itself. Nothing is done where a verifier reads the reference in a
        way that cannot be split off (:func:`~verified_tts.selection.scoring.scores_ahead`)."""
        active = self.verifiers.active
        if not stored or not scores_ahead(active):
            return
        none = [None] * len(stored)
        clips = self._clips([utterance for utterance, _ in wanted], stored, none, none)
        measured = measure_clips(
            active, clips, timer=lambda name: self.stats.timer(f"verify:{name}")
        )
        with self.ahead_lock:
            self.ahead[tuple(candidate.key for candidate in stored)] = measured
            while len(self.ahead) > 2:  # one a window's verify did not ask for in the end
                self.ahead.pop(next(iter(self.ahead)))

    # ------------------------------------------------------------------------------------------
    def decide(
        self,
        utterance: Utterance,
        candidates: Sequence[CandidateResult],
        embeddings: Sequence[tuple[float, ...] | None],
        judgements: Sequence[Judgement] | None = None,
    ) -> UtteranceResult:
        """The policy's winner among ``candidates`` (judged again unless ``judgements`` are
        given), committed to the store as this run's decision."""
        if judgements is None:
            judgements = judge_all(
                [(c.metrics, c.detail) for c in candidates], self.policy_of(utterance)
            )
        winner, flagged = choose(list(judgements))
        # the metrics and verdicts of the takes compared with each other
        # (verified_tts.selection.consensus)
        compared = with_take_metrics(
            [c.metrics for c in candidates], [c.detail for c in candidates]
        )
        kept = [
            replace(c, metrics=m, passed=j.passed, failed=j.failed, score=j.score)
            for c, m, j in zip(candidates, compared, judgements, strict=True)
        ]
        if self.keep == "winners":
            self.store.drop_audio(c.key for c in kept if c.index != winner)
            kept = [c if c.index == winner else c.without_audio() for c in kept]
        result = UtteranceResult(
            utterance, tuple(kept), winner, flagged, reused=False, embedding=embeddings[winner]
        )
        with self.stats.timer("store"):
            self.store.put_decision(result.decision(self.policy_id_of(utterance)))
        return result


def _as_take(stored: StoredCandidate, index: int) -> StoredCandidate:
    """A stored candidate as take ``index`` of the line that asked for it: a line read in
    several ways stores its take under its reading's key and number."""
    return stored if stored.index == index else replace(stored, index=index)
