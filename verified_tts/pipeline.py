"""Best-of-N synthesis: sample candidates, score them in batches, pick winners, store everything.

:class:`Synthesizer` holds the loaded generator and verifiers (models are loaded once, in
:meth:`Synthesizer.load`) and runs utterances through rounds: every pending utterance of a window
gets the candidates its round needs (already-stored ones are reused, the rest go to the generator
in one batch so an LLM engine has them all in flight), the new candidates are scored by each
verifier in one batch, and the selection policy either settles an utterance (its decision is
committed to the store) or asks for another round. Windows follow book order, and the speaker
reference of a window is the user's reference or, per voice, the centroid of the winners of
earlier windows, so the same input and seeds give the same winners however often the run was
interrupted.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from verified_tts.config import RenderConfig
from verified_tts.errors import UserError
from verified_tts.generators import Generator, SynthesisRequest, load_generator
from verified_tts.keys import candidate_key, candidate_seed, stable_hash, utterance_key
from verified_tts.selection import (
    Judgement,
    SelectionPolicy,
    choose,
    judge,
    round_targets,
    should_stop,
)
from verified_tts.store import Decision, Store, StoredCandidate
from verified_tts.text.book import Segment
from verified_tts.verification import LoadedVerifiers, load_verifiers
from verifiers import Clip, Score

__all__ = [
    "CandidateResult",
    "RunStats",
    "Synthesizer",
    "Utterance",
    "UtteranceResult",
    "plan_utterances",
]


@dataclass(frozen=True)
class Utterance:
    """One segment of the input with its content address."""

    key: str
    segment: Segment
    voice: str | None = None
    target_duration_s: float | None = None  # dubbing: the seconds the line should fill

    @property
    def text(self) -> str:
        return self.segment.text


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

    def as_dict(self) -> dict[str, Any]:
        return {
            "candidates_generated": self.candidates_generated,
            "candidates_reused": self.candidates_reused,
            "utterances_reused": self.utterances_reused,
            "audio_seconds_generated": round(self.audio_seconds_generated, 3),
            "audio_seconds_verified": round(self.audio_seconds_verified, 3),
            "tokens_generated": self.tokens_generated,
            "seconds": {stage: round(s, 3) for stage, s in self.seconds.items()},
        }

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


class _Timer:
    def __init__(self, stats: RunStats, stage: str) -> None:
        self.stats, self.stage = stats, stage

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *_: object) -> None:
        self.stats.seconds[self.stage] += time.perf_counter() - self.start


def plan_utterances(
    segments: Sequence[Segment],
    generator: Generator,
    *,
    base_seed: int,
    voice: str | None,
    target_durations: Sequence[float | None] | None = None,
) -> list[Utterance]:
    """Give every segment its content address under this generator and seed."""
    identity = generator.identity()
    targets = list(target_durations) if target_durations is not None else [None] * len(segments)
    planned = []
    for segment, target in zip(segments, targets, strict=True):
        segment_voice = segment.voice or voice
        key = utterance_key(
            segment.spoken,
            voice=segment_voice,
            emotion=segment.emotion,
            generator=identity,
            base_seed=base_seed,
            target_duration_s=target,
            phonemes=segment.phonemes,
        )
        planned.append(Utterance(key, segment, segment_voice, target))
    return planned


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


# short takes a voice needs before short clips are judged against their centroid
MIN_SHORT_TAKES = 3


def _centroid(vectors: Sequence[np.ndarray]) -> np.ndarray | None:
    return _unit(np.mean(vectors, axis=0)) if len(vectors) >= MIN_SHORT_TAKES else None


def _short_references(
    bootstrap: Mapping[str | None, np.ndarray | None],
    winners: Mapping[str | None, list[np.ndarray]],
) -> dict[str | None, np.ndarray | None]:
    """Each voice's short-take reference: its short winners' centroid once it has enough of
    them, else the first window's short candidates' (or none)."""
    out = {}
    for voice, first in bootstrap.items():
        centroid = _centroid(winners.get(voice, []))
        out[voice] = first if centroid is None else centroid
    return out


class Synthesizer:
    """A loaded generator plus verifiers, running best-of-N over a store."""

    def __init__(
        self,
        generator: Generator,
        verifiers: LoadedVerifiers,
        config: RenderConfig,
        *,
        voice_reference: np.ndarray | None = None,
    ) -> None:
        self.generator = generator
        self.verifiers = verifiers
        self.config = config
        self.policy = config.selection
        self.voice_reference = voice_reference
        self.stats = RunStats()
        self._seen_here: set[str] = set()  # candidate keys counted in this run's stats
        self._sample_lock = threading.Lock()
        self._search: Any = None  # the beam search, built on first use
        self._verifier_identity: str | None = None  # stable hash, computed on first use
        # per voice: the centroid of its short takes, for clips too short for the reference
        self._short_references: dict[str | None, np.ndarray | None] = {}

    @classmethod
    def load(cls, config: RenderConfig) -> Synthesizer:
        """Load the generator and every verifier once (the slow part of start-up)."""
        generator = load_generator(config.generator)
        if config.search.beam or config.search.budget_s is not None:
            from verified_tts.generators.codec_lm_search import prefix_backend

            if prefix_backend(generator) is None:  # before the verifiers load
                raise _no_search(config, generator.name)
        verifiers = load_verifiers(config.verifiers)
        reference = None
        if config.generator.voice_ref:
            reference = verifiers.embed_reference(config.generator.voice_ref)
        return cls(generator, verifiers, config, voice_reference=reference)

    def variant(
        self,
        config: RenderConfig | None = None,
        *,
        verifiers: LoadedVerifiers | None = None,
        voice_reference: np.ndarray | None | object = ...,
    ) -> Synthesizer:
        """The same loaded models under changed settings (policy, N, extra verifiers).

        Nothing is loaded again; the variant starts its own run statistics.
        """
        return Synthesizer(
            self.generator,
            verifiers if verifiers is not None else self.verifiers,
            config if config is not None else self.config,
            voice_reference=(
                self.voice_reference if voice_reference is ... else voice_reference  # type: ignore[arg-type]
            ),
        )

    def plan(
        self,
        segments: Sequence[Segment],
        target_durations: Sequence[float | None] | None = None,
    ) -> list[Utterance]:
        return plan_utterances(
            segments,
            self.generator,
            base_seed=self.config.seed,
            voice=self.config.generator.voice,
            target_durations=target_durations,
        )

    def policy_id(self, n: int) -> str:
        """Decisions are reused only under the same N, policy, verifiers and search."""
        search = self.config.search.identity()
        return stable_hash(
            {
                **({"search": search} if search is not None else {}),
                "n": n,
                "policy": self.policy.identity(),
                "verifiers": self.verifiers.identity(),
                "reference": self.verifiers.reference_id(self.config.generator.voice_ref),
            }
        )

    # ------------------------------------------------------------------------------------------
    def run(
        self,
        utterances: Sequence[Utterance],
        store: Store,
        *,
        n: int | None = None,
        on_result: Callable[[UtteranceResult], None] | None = None,
    ) -> list[UtteranceResult]:
        """Render every utterance (reusing stored decisions) and return results in input order."""
        n = n or self.config.candidates
        self._check_emotions(utterances)
        beam = self.config.search.beam
        if beam or self.config.search.budget_s is not None:
            self._beam_search()  # fails before any work with a generator that has no tokens
        policy_id = self.policy_id(n)
        results: dict[str, UtteranceResult] = {}
        # One reference per voice, so a multi-voice dub does not average its voices together.
        winners: dict[str | None, list[np.ndarray]] = defaultdict(list)
        short_winners: dict[str | None, list[np.ndarray]] = defaultdict(list)
        bootstrap: dict[str | None, np.ndarray | None] = {}
        short_bootstrap: dict[str | None, np.ndarray | None] = {}
        # A beam search samples no best-of-N candidate to bootstrap a reference from: its first
        # window is searched without one, later windows against the winners' centroid.
        for voice in dict.fromkeys(u.voice for u in utterances):
            first = [u for u in utterances if u.voice == voice][: self.config.window]
            found = (None, None) if beam else self._bootstrap_reference(first, store)
            short_bootstrap[voice] = found[1]
            if self.voice_reference is None:
                bootstrap[voice] = found[0]
        windows = list(_windows(utterances, self.config.window))
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="prefetch") as prefetcher:
            upcoming: Future[None] | None = None
            for position, window in enumerate(windows):
                if upcoming is not None:
                    upcoming.result()  # its candidates are stored before this window samples
                    upcoming = None
                if self.config.prefetch and not beam and position + 1 < len(windows):
                    upcoming = prefetcher.submit(
                        self._prefetch, windows[position + 1], store, n, policy_id
                    )
                references = self._references(bootstrap, winners)
                self._short_references = _short_references(short_bootstrap, short_winners)
                pending = []
                for utterance in window:
                    if utterance.key in results:  # the same sentence twice in one book
                        continue
                    result = self._stored_result(utterance, store, policy_id)
                    if result is None:
                        pending.append(utterance)
                        continue
                    results[utterance.key] = result
                    if on_result:
                        on_result(result)
                for result in self._render_window(pending, store, n, policy_id, references):
                    results[result.utterance.key] = result
                    if on_result:
                        on_result(result)
                for utterance in window:
                    embedding = results[utterance.key].embedding
                    if embedding is not None:
                        vector = np.asarray(embedding, dtype=np.float32)
                        winners[utterance.voice].append(vector)
                        if self._is_short(results[utterance.key].winner_candidate.detail):
                            short_winners[utterance.voice].append(vector)
        return [_with_utterance(results[u.key], u) for u in utterances]

    def _prefetch(self, window: Sequence[Utterance], store: Store, n: int, policy_id: str) -> None:
        """Generate the next window's first round while this window is being verified, so an
        LLM engine is not idle while the verifiers work. Only candidates that the next window
        will ask for anyway are made, so the winners do not change."""
        first_round = round_targets(n, self.policy)[0]
        undecided = {
            u.key: u for u in window if store.get_decision(u.key, policy_id) is None
        }.values()
        self._sample([(u, k) for u in undecided for k in range(first_round)], store)

    def _check_emotions(self, utterances: Sequence[Utterance]) -> None:
        """Fail before any work when a target emotion is not one of the model's labels."""
        emotion = self.verifiers.get("emotion")
        if emotion is None or not hasattr(emotion, "resolve_label"):
            return
        for label in dict.fromkeys(u.segment.emotion for u in utterances if u.segment.emotion):
            emotion.resolve_label(label)

    def _references(
        self,
        bootstrap: Mapping[str | None, np.ndarray | None],
        winners: Mapping[str | None, list[np.ndarray]],
    ) -> dict[str | None, np.ndarray | None]:
        """Each voice's reference for the next window: the user's, else its winners' centroid,
        else (no winner yet) its bootstrap centroid."""
        if self.voice_reference is not None:
            return {}  # every clip falls back to the user's reference
        return {
            voice: _unit(np.mean(winners[voice], axis=0)) if winners.get(voice) else first
            for voice, first in bootstrap.items()
        }

    def _bootstrap_reference(
        self, first_window: Sequence[Utterance], store: Store
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The book's voice before any winner exists: the centroid of candidate 0 of the first
        window's utterances, and of those of them too short for it (None with fewer than
        ``MIN_SHORT_TAKES``). Those candidates are needed by round one anyway (and come from the
        store on a rerun), so the reference is the same however the run was interrupted."""
        speaker = self.verifiers.get("speaker")
        if speaker is None or not hasattr(speaker, "embed"):
            return None, None
        unique = list({u.key: u for u in first_window}.values())
        stored = self._sample([(u, 0) for u in unique], store)
        clips = [
            Clip(audio=store.load_audio(c), sample_rate=c.sample_rate, text=u.segment.text)
            for u, c in zip(unique, stored, strict=True)
        ]
        with _Timer(self.stats, "verify:speaker"):
            if hasattr(speaker, "embed_with_speech"):
                embeddings, speech = speaker.embed_with_speech(clips)
            else:
                embeddings, speech = speaker.embed(clips), [0.0] * len(clips)
        short = [
            e
            for e, s in zip(embeddings, speech, strict=True)
            if self._is_short({"speaker_speech_s": s})
        ]
        return _unit(np.mean(embeddings, axis=0)), _centroid(short)

    def _is_short(self, detail: Mapping[str, Any]) -> bool:
        """Whether a take with this score detail is too short for the book's reference."""
        speaker = self.verifiers.get("speaker")
        seconds = detail.get("speaker_speech_s")
        return bool(
            seconds is not None and hasattr(speaker, "is_short") and speaker.is_short(seconds)
        )

    def _stored_result(
        self, utterance: Utterance, store: Store, policy_id: str
    ) -> UtteranceResult | None:
        """An earlier run's decision for this utterance, if it and its winner's audio exist."""
        decision = store.get_decision(utterance.key, policy_id)
        if decision is None:
            return None
        records = decision.record.get("candidates", [])
        key = (  # a beam candidate's key is not candidate_key(): read it from the record
            records[decision.winner]["key"]
            if decision.winner < len(records)
            else candidate_key(utterance.key, decision.winner)
        )
        winner = store.get_candidate(key)
        if winner is None or winner.audio is None:
            return None
        result = _result_from_decision(utterance, decision)
        with self._sample_lock:  # the prefetch thread counts too
            self.stats.utterances_reused += 1
            fresh = {c.key for c in result.candidates} - self._seen_here
            self.stats.candidates_reused += len(fresh)
            self._seen_here |= fresh
        return result

    def _render_window(
        self,
        pending: Sequence[Utterance],
        store: Store,
        n: int,
        policy_id: str,
        references: Mapping[str | None, np.ndarray | None],
    ) -> Iterator[UtteranceResult]:
        if self.config.search.beam:
            yield from self._beam_search().render_window(pending, store, policy_id, references)
            return
        limit = self._budget_limits(pending, n)
        have: dict[str, list[CandidateResult]] = {u.key: [] for u in pending}
        embeddings: dict[str, list[tuple[float, ...] | None]] = {u.key: [] for u in pending}
        active = list(pending)
        for target in round_targets(n, self.policy):
            if not active:
                break
            wanted = [
                (u, k) for u in active for k in range(len(have[u.key]), min(target, limit[u.key]))
            ]
            stored = self._sample(wanted, store)
            scored = self._verify(wanted, stored, store, references)
            for (utterance, _), (result, embedding) in zip(wanted, scored, strict=True):
                have[utterance.key].append(result)
                embeddings[utterance.key].append(embedding)
            still_active = []
            for utterance in active:
                judgements = [c.judgement(self.policy) for c in have[utterance.key]]
                if target < limit[utterance.key] and not should_stop(
                    judgements, limit[utterance.key], self.policy
                ):
                    still_active.append(utterance)
                    continue
                yield self._decide(
                    utterance,
                    have[utterance.key],
                    embeddings[utterance.key],
                    judgements,
                    store,
                    policy_id,
                )
            active = still_active

    def _beam_search(self) -> Any:
        """The beam search over this generator (one clear error for one that cannot)."""
        if self._search is None:
            from verified_tts.generators.codec_lm_search import prefix_backend
            from verified_tts.search import BeamSearch

            backend = prefix_backend(self.generator)
            if backend is None:
                raise _no_search(self.config, self.generator.name)
            self._search = BeamSearch(self, backend)
        return self._search

    def _budget_limits(self, pending: Sequence[Utterance], n: int) -> dict[str, int]:
        """Candidates per utterance: N, or with a budget as many as fit if each ran its whole
        token allowance (so the budget is never passed; at least one)."""
        if self.config.search.budget_s is None:
            return {u.key: n for u in pending}
        search = self._beam_search()
        limits = {}
        for u in pending:
            request = SynthesisRequest(u.key, 0, 0, u.segment.spoken, u.voice, u.segment.emotion)
            cap = search.backend.max_tokens(request)
            limits[u.key] = max(1, min(n, (search.budget or 0) // cap))
        return limits

    def _sample(
        self, wanted: Sequence[tuple[Utterance, int]], store: Store
    ) -> list[StoredCandidate]:
        """Stored candidates for ``wanted``, generating (in one batch) the ones not yet stored.

        Serialised with a lock: the prefetch thread samples the next window while the main
        thread verifies, and a generator engine takes one batch at a time."""
        with self._sample_lock:
            return self._sample_locked(wanted, store)

    def _sample_locked(
        self, wanted: Sequence[tuple[Utterance, int]], store: Store
    ) -> list[StoredCandidate]:
        found: dict[int, StoredCandidate] = {}
        requests: list[tuple[int, SynthesisRequest]] = []
        with _Timer(self.stats, "store"):
            for position, (utterance, index) in enumerate(wanted):
                stored = store.get_candidate(candidate_key(utterance.key, index))
                if stored is not None:
                    found[position] = stored
                    if stored.key not in self._seen_here:
                        self._seen_here.add(stored.key)
                        self.stats.candidates_reused += 1
                    continue
                requests.append(
                    (
                        position,
                        SynthesisRequest(
                            utterance_key=utterance.key,
                            index=index,
                            seed=candidate_seed(utterance.key, index),
                            text=utterance.segment.spoken,
                            voice=utterance.voice,
                            emotion=utterance.segment.emotion,
                            phonemes=utterance.segment.phonemes,
                        ),
                    )
                )
        if requests:
            with _Timer(self.stats, "generate"):
                candidates = self.generator.sample([request for _, request in requests])
            with _Timer(self.stats, "store"):
                for (position, request), candidate in zip(requests, candidates, strict=True):
                    found[position] = store.put_candidate(
                        candidate_key(request.utterance_key, request.index),
                        utterance=request.utterance_key,
                        index=request.index,
                        seed=request.seed,
                        audio=candidate.audio,
                        sample_rate=candidate.sample_rate,
                        info=candidate.info,
                    )
                    self.stats.candidates_generated += 1
                    self._seen_here.add(found[position].key)
                    self.stats.audio_seconds_generated += candidate.duration_s
                    self.stats.tokens_generated += int(candidate.info.get("tokens", 0) or 0)
        return [found[position] for position in range(len(wanted))]

    def _verify(
        self,
        wanted: Sequence[tuple[Utterance, int]],
        stored: Sequence[StoredCandidate],
        store: Store,
        references: Mapping[str | None, np.ndarray | None],
    ) -> list[tuple[CandidateResult, tuple[float, ...] | None]]:
        """Score one round's candidates: from the store where an earlier run already scored
        them under the same context, else with the verifiers (in one call each), committing the
        new scores in one transaction so a resumed run sees the whole round or none of it."""
        speaker_references = [
            references.get(utterance.voice, self.voice_reference) for utterance, _ in wanted
        ]
        short = [self._short_references.get(utterance.voice) for utterance, _ in wanted]
        contexts = [
            self._score_context(utterance, reference, short_reference)
            for (utterance, _), reference, short_reference in zip(
                wanted, speaker_references, short, strict=True
            )
        ]
        with _Timer(self.stats, "store"):
            records = [
                store.get_scores(candidate.key, context)
                for candidate, context in zip(stored, contexts, strict=True)
            ]
        missing = [position for position, record in enumerate(records) if record is None]
        if missing:
            fresh = self._score(
                [wanted[p] for p in missing],
                [stored[p] for p in missing],
                store,
                [speaker_references[p] for p in missing],
                [short[p] for p in missing],
            )
            for position, record in zip(missing, fresh, strict=True):
                records[position] = record
            with _Timer(self.stats, "store"):
                store.put_scores((stored[p].key, contexts[p], records[p]) for p in missing)
        results = []
        for candidate, record in zip(stored, records, strict=True):
            assert record is not None
            metrics = record["metrics"]
            embedding = None if record["embedding"] is None else tuple(record["embedding"])
            judgement = judge(metrics, self.policy)
            results.append(
                (
                    CandidateResult(
                        index=candidate.index,
                        seed=candidate.seed,
                        key=candidate.key,
                        duration_s=round(candidate.duration_s, 3),
                        metrics=metrics,
                        detail=record["detail"],
                        passed=judgement.passed,
                        failed=judgement.failed,
                        score=judgement.score,
                        audio=candidate.audio,
                        info=candidate.info,
                    ),
                    embedding,
                )
            )
        return results

    def _score(
        self,
        wanted: Sequence[tuple[Utterance, int]],
        stored: Sequence[StoredCandidate],
        store: Store,
        references: Sequence[np.ndarray | None],
        short_references: Sequence[np.ndarray | None] | None = None,
    ) -> list[dict[str, Any]]:
        """Every active verifier on these candidates; one JSON-shaped record per candidate (the
        shape the store keeps, so a fresh score and a stored one are the same values)."""
        with _Timer(self.stats, "store"):
            clips = [
                Clip(
                    audio=store.load_audio(candidate),
                    sample_rate=candidate.sample_rate,
                    text=utterance.segment.text,
                    spoken=utterance.segment.spoken,
                    emotion=utterance.segment.emotion,
                    speaker_reference=reference,
                    short_reference=short_reference,
                    target_duration_s=utterance.target_duration_s,
                    info=candidate.info,
                )
                for (utterance, _), candidate, reference, short_reference in zip(
                    wanted,
                    stored,
                    references,
                    short_references or [None] * len(wanted),
                    strict=True,
                )
            ]
        scores: list[list[Score]] = []
        for verifier in self.verifiers.active:
            with _Timer(self.stats, f"verify:{verifier.name}"):
                scores.append(verifier.score(clips))
        self.stats.audio_seconds_verified += sum(clip.duration_s for clip in clips)
        records = []
        for position in range(len(clips)):
            metrics: dict[str, float] = {}
            detail: dict[str, Any] = {}
            embedding = None
            for per_verifier in scores:
                score = per_verifier[position]
                metrics.update({k: float(v) for k, v in score.metrics.items()})
                detail.update(score.detail)
                embedding = score.embedding or embedding
            record = {
                "metrics": metrics,
                "detail": detail,
                "embedding": None if embedding is None else [float(x) for x in embedding],
            }
            records.append(json.loads(json.dumps(record)))
        return records

    def _score_context(
        self,
        utterance: Utterance,
        reference: np.ndarray | None,
        short_reference: np.ndarray | None = None,
    ) -> str:
        """What a candidate's scores depend on besides its audio (its key covers the text and
        the generator): the verifiers, the speaker reference, the dub slot, the emotion."""
        if self._verifier_identity is None:
            self._verifier_identity = stable_hash(self.verifiers.identity())
        return stable_hash(
            {
                "verifiers": self._verifier_identity,
                "reference": None
                if reference is None
                else hashlib.sha256(np.ascontiguousarray(reference, np.float32)).hexdigest(),
                **(
                    {}
                    if short_reference is None
                    else {
                        "short_reference": hashlib.sha256(
                            np.ascontiguousarray(short_reference, np.float32)
                        ).hexdigest()
                    }
                ),
                "text": utterance.segment.text,
                "spoken": utterance.segment.spoken,
                "emotion": utterance.segment.emotion,
                "target_duration_s": utterance.target_duration_s,
            }
        )

    def _decide(
        self,
        utterance: Utterance,
        candidates: list[CandidateResult],
        embeddings: list[tuple[float, ...] | None],
        judgements: list[Judgement],
        store: Store,
        policy_id: str,
    ) -> UtteranceResult:
        winner, flagged = choose(judgements)
        if self.config.keep == "winners":
            store.drop_audio(c.key for c in candidates if c.index != winner)
            candidates = [c if c.index == winner else _without_audio(c) for c in candidates]
        result = UtteranceResult(
            utterance,
            tuple(candidates),
            winner,
            flagged,
            reused=False,
            embedding=embeddings[winner],
        )
        with _Timer(self.stats, "store"):
            store.put_decision(
                Decision(
                    utterance.key,
                    policy_id,
                    winner,
                    flagged,
                    {
                        "candidates": [_candidate_record(c) for c in candidates],
                        "embedding": list(embeddings[winner]) if embeddings[winner] else None,
                    },
                )
            )
        return result


def _no_search(config: RenderConfig, generator: str) -> UserError:
    what = "--search beam" if config.search.beam else "--budget"
    return UserError(
        f"{what} needs a codec-LM generator (orpheus, llasa or spark) in this process, whose "
        f"tokens can be continued; '{generator}' cannot: use --search best-of-n without --budget "
        "with it (and without --ray)"
    )


def _windows(items: Sequence[Utterance], size: int) -> Iterator[Sequence[Utterance]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _without_audio(candidate: CandidateResult) -> CandidateResult:
    return replace(candidate, audio=None)


def _candidate_record(candidate: CandidateResult) -> dict[str, Any]:
    return {
        "index": candidate.index,
        "seed": candidate.seed,
        "key": candidate.key,
        "duration_s": candidate.duration_s,
        "metrics": dict(candidate.metrics),
        "detail": dict(candidate.detail),
        "passed": candidate.passed,
        "failed": list(candidate.failed),
        "score": candidate.score,
        "audio": candidate.audio,
        "info": dict(candidate.info),
    }


def _result_from_decision(utterance: Utterance, decision: Decision) -> UtteranceResult:
    candidates = tuple(
        CandidateResult(
            index=c["index"],
            seed=c["seed"],
            key=c["key"],
            duration_s=c["duration_s"],
            metrics=c["metrics"],
            detail=c["detail"],
            passed=c["passed"],
            failed=tuple(c["failed"]),
            score=c["score"],
            audio=c["audio"],
            info=c["info"],
        )
        for c in decision.record["candidates"]
    )
    embedding = decision.record.get("embedding")
    return UtteranceResult(
        utterance,
        candidates,
        decision.winner,
        decision.flagged,
        reused=True,
        embedding=tuple(embedding) if embedding else None,
    )


def _with_utterance(result: UtteranceResult, utterance: Utterance) -> UtteranceResult:
    """A repeated sentence shares its render but keeps its own place in the book."""
    if result.utterance is utterance:
        return result
    return replace(result, utterance=utterance)
