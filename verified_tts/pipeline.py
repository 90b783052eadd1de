"""The render loop: utterances in book order, a window at a time, winners into the store.

:class:`Synthesizer` holds the loaded generator and verifiers (models are loaded once, in
:meth:`Synthesizer.load`) and runs utterances in windows: an utterance the store already decided
(under the same N, policy, verifiers and search) is taken from it, and the rest of the window goes
to the run's :class:`~verified_tts.selection.strategy.Strategy`, best-of-N rounds
(:class:`~verified_tts.selection.best_of_n.BestOfN`) or beam search
(:class:`~verified_tts.selection.beam_search.BeamSearch`), through one
:class:`~verified_tts.selection.strategy.RenderContext`. While a window is being verified, the
prefetch thread lets the strategy sample what the next window asks for first, so an LLM engine is
not idle. The speaker reference of a window is the user's reference or, per voice, the centroid of
the winners of earlier windows (or of the first window's candidate 0, for a strategy that samples
those), so the same input and seeds give the same winners however often the run was interrupted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from verified_tts.errors import UserError
from verified_tts.generators import Generator, load_generator
from verified_tts.generators.voice_set import CastGenerator, VoiceSet, voice_name
from verified_tts.options import RenderConfig, SelectionPolicy, to_table
from verified_tts.selection.scoring import unit_centroid
from verified_tts.selection.strategy import ChecksFirst, RenderContext, Strategy
from verified_tts.storage.keys import candidate_key, readings_key, stable_hash, utterance_key
from verified_tts.storage.results import CandidateResult, RunStats, Utterance, UtteranceResult
from verified_tts.storage.store import Store
from verified_tts.text.book import Segment
from verified_tts.text.readings import LineReading
from verified_tts.verification import LoadedVerifiers, load_verifiers
from verified_tts.voices import own_speaker
from verifiers import Clip, LabelChecker, ShortClipJudge, SpeakerEmbedder

if TYPE_CHECKING:
    from verified_tts.generators.codec_lm_search import PrefixBackend
    from verified_tts.selection.beam_search import BeamSearch

__all__ = [
    "CandidateResult",
    "RunStats",
    "Synthesizer",
    "Utterance",
    "UtteranceResult",
    "plan_utterances",
    "search_strategy",
]


def plan_utterances(
    segments: Sequence[Segment],
    generator: Generator,
    *,
    base_seed: int,
    voice: str | None,
    target_durations: Sequence[float | None] | None = None,
    readings: Sequence[tuple[LineReading, ...]] | None = None,
) -> list[Utterance]:
    """Give every segment its content address under this generator and seed.

    A :class:`~verified_tts.generators.voice_set.CastGenerator` keys each line under its own
    voice's generator; a plain generator speaks only its own voice, and a line in another
    generator's voice fails here, before any work. A segment with ``readings`` (the ways its
    takes may read it, :mod:`verified_tts.text.readings`) gets each reading's key and a key of
    its own over them (:func:`~verified_tts.storage.keys.readings_key`).
    """
    identity = generator.identity()
    identity_for = generator.identity_for if isinstance(generator, CastGenerator) else None
    targets = list(target_durations) if target_durations is not None else [None] * len(segments)
    ways = list(readings) if readings is not None else [()] * len(segments)
    planned = []
    for segment, target, own in zip(segments, targets, ways, strict=True):
        segment_voice = segment.voice or voice
        if segment.voice and identity_for is None:
            own_speaker(segment.voice, generator.name, generator.model)
        content = {
            "voice": segment_voice,
            "emotion": segment.emotion,
            "generator": identity if identity_for is None else identity_for(segment_voice),
            "base_seed": base_seed,
            "target_duration_s": target,
        }
        key = utterance_key(segment.spoken, phonemes=segment.phonemes, **content)
        keyed = tuple(
            replace(r, key=utterance_key(r.spoken, phonemes=r.phonemes, **content)) for r in own
        )
        if keyed:
            key = readings_key([r.key for r in keyed])
        planned.append(Utterance(key, segment, segment_voice, target, keyed))
    return planned


def search_strategy(config: RenderConfig, generator: Generator) -> Strategy:
    """The strategy ``config.search`` asks for on ``generator``; a beam search or a budget on a
    generator whose tokens cannot be continued is one clear error."""
    from verified_tts.selection.best_of_n import BestOfN

    search = config.search
    if not search.beam and search.budget_s is None:
        return BestOfN()
    backend = _prefix_backend(config, generator)
    if search.beam:
        from verified_tts.selection.beam_search import BeamSearch

        return BeamSearch(search, backend)
    return BestOfN(backend, search.budget_s)


class Synthesizer:
    """A loaded generator plus verifiers, running a search strategy over a store."""

    def __init__(
        self,
        generator: Generator,
        verifiers: LoadedVerifiers,
        config: RenderConfig,
        *,
        voice_reference: np.ndarray | None = None,
        reference_for_every_voice: bool = False,
    ) -> None:
        self.generator = generator
        self.verifiers = verifiers
        self.config = config
        self.policy = config.selection
        # the user's reference (--voice-ref) is the render's own voice's; a run of one voice's
        # lines (a re-render) passes that voice's reference for all of them
        self.voice_reference = voice_reference
        self.reference_for_every_voice = reference_for_every_voice
        self.stats = RunStats()
        self._runs_started = 0

    def start_run(self) -> None:
        """Begin a run's own statistics. A synthesizer reused for another render (a job
        worker, a benchmark's repeats) reports that render's work, not the sum of every render
        it did; the first run keeps the seconds that loading the models took."""
        if self._runs_started:
            self.stats = RunStats(backend=self.stats.backend)
        self._runs_started += 1

    def hand_over_load_seconds(self) -> float:
        """The seconds loading took that no run of this synthesizer has reported yet (0.0 once
        one has), handed to the caller's run, which reports them instead: a dub runs on a
        variant of the synthesizer it is given, so a Ray synthesizer's start-up would otherwise
        be reported by nobody."""
        if self._runs_started:
            return 0.0
        self._runs_started += 1
        return float(self.stats.seconds.pop("load", 0.0))

    @classmethod
    def load(cls, config: RenderConfig) -> Synthesizer:
        """Load the generator and every verifier once (the slow part of start-up)."""
        if config.generator.voice_ref:  # a reference that cannot serve fails before any model loads
            from verifiers.speaker import check_reference_file

            check_reference_file(config.generator.voice_ref)
        generator = load_generator(config.generator)
        search_strategy(config, generator)  # a search it cannot run fails before the verifiers load
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
        reference_for_every_voice: bool | None = None,
    ) -> Synthesizer:
        """The same loaded models under changed settings (policy, N, extra verifiers).

        Nothing is loaded again; the variant starts its own run statistics (on the same backend).
        """
        variant = Synthesizer(
            self.generator,
            verifiers if verifiers is not None else self.verifiers,
            config if config is not None else self.config,
            voice_reference=(
                self.voice_reference if voice_reference is ... else voice_reference  # type: ignore[arg-type]
            ),
            reference_for_every_voice=(
                self.reference_for_every_voice
                if reference_for_every_voice is None
                else reference_for_every_voice
            ),
        )
        variant.stats.backend = self.stats.backend
        return variant

    def plan(
        self,
        segments: Sequence[Segment],
        target_durations: Sequence[float | None] | None = None,
        readings: Sequence[tuple[LineReading, ...]] | None = None,
    ) -> list[Utterance]:
        self._cast_voices(segments)
        return plan_utterances(
            segments,
            self.generator,
            base_seed=self.config.seed,
            voice=self.config.generator.voice,
            target_durations=target_durations,
            readings=readings,
        )

    def _cast_voices(self, segments: Sequence[Segment]) -> None:
        """When a line names a voice of another generator than the render's (a character in
        hibari:heart in a book narrated by Piper), route the render through a
        :class:`~verified_tts.generators.voice_set.CastGenerator` that loads that generator once.
        A book in the render's own voices keeps its generator, and its keys, unchanged."""
        if isinstance(self.generator, CastGenerator):
            return
        voices = dict.fromkeys(s.voice for s in segments if s.voice)
        if not voices:
            return
        cast = CastGenerator(
            self.generator,
            VoiceSet(
                self.config.generator,
                voices_dir=self.config.voices_dir,
                options={self.config.generator.name: to_table(self.config.generator.options)},
            ),
        )
        others = [voice for voice in voices if not cast.speaks(voice)]
        if not others:
            return
        search = self.config.search
        if search.beam or search.budget_s is not None:
            what = "--search beam" if search.beam else "--budget"
            raise UserError(
                f"{what} runs on the render's one generator, and the voice {others[0]} is "
                f"spoken by another: render that book with --search best-of-n without --budget"
            )
        self.generator = cast

    def policy_id(self, n: int, voice: str | None = None) -> str:
        """Decisions are reused only under the same N, policy, verifiers and search; a line of
        a voice with its own ``[selection.voices]`` policy is decided under that one."""
        search = self.config.search.identity()
        return stable_hash(
            {
                **({"search": search} if search is not None else {}),
                "n": n,
                "policy": self.policy_of(voice).identity(),
                "verifiers": self.verifiers.identity(),
                "reference": self.verifiers.reference_id(self.config.generator.voice_ref),
            }
        )

    def policy_of(self, voice: str | None) -> SelectionPolicy:
        """The selection policy of lines with the voice setting ``voice``."""
        if not self.config.voice_selection:
            return self.policy
        return self.config.voice_selection.get(
            voice_name(self.generator, voice, self.config.voices_dir), self.policy
        )

    @cached_property
    def strategy(self) -> Strategy:
        """This synthesizer's search strategy (built on first use, then kept)."""
        return search_strategy(self.config, self.generator)

    def prefix_backend(self) -> PrefixBackend:
        """The generator's token-prefix backend (what a search and a budget run on)."""
        return _prefix_backend(self.config, self.generator)

    def _beam_search(self) -> BeamSearch:
        """The beam search this synthesizer runs (tests reach its backend through it)."""
        from verified_tts.selection.beam_search import BeamSearch

        strategy = self.strategy
        return (
            strategy
            if isinstance(strategy, BeamSearch)
            else BeamSearch(self.config.search, self.prefix_backend())
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
        strategy = self.strategy  # fails before any work with a generator it cannot search
        if isinstance(strategy, ChecksFirst):
            strategy.check(utterances, n)  # a budget too small fails before any work too
        context = RenderContext(
            generator=self.generator,
            verifiers=self.verifiers,
            policy=self.policy,
            store=store,
            stats=self.stats,
            n=n,
            policy_id=self.policy_id(n),
            keep=self.config.keep,
            voice_reference=self.voice_reference,
            policies={
                voice: (self.policy_of(voice), self.policy_id(n, voice))
                for voice in dict.fromkeys(u.voice for u in utterances)
                if self.policy_of(voice) is not self.policy
            },
        )
        results: dict[str, UtteranceResult] = {}
        # One reference per voice, so a multi-voice dub does not average its voices together.
        winners: dict[str | None, list[np.ndarray]] = defaultdict(list)
        short_winners: dict[str | None, list[np.ndarray]] = defaultdict(list)
        bootstrap: dict[str | None, np.ndarray | None] = {}
        # The user's reference (--voice-ref) is the render's own voice; every other voice of the
        # book is compared with its own lines, never with the narrator's. Short takes have a
        # centroid of their own per voice.
        own_voice = self.config.generator.voice
        short_bootstrap: dict[str | None, np.ndarray | None] = {}
        for voice in dict.fromkeys(u.voice for u in utterances):
            given = self.voice_reference is not None
            first = [u for u in utterances if u.voice == voice][: self.config.window]
            found = (
                self._bootstrap_reference(first, context)
                if strategy.bootstraps_reference
                else (None, None)  # its first window is searched without one
            )
            short_bootstrap[voice] = found[1]
            if not given or (voice != own_voice and not self.reference_for_every_voice):
                bootstrap[voice] = found[0]
        windows = list(_windows(utterances, self.config.window))
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="prefetch") as prefetcher:
            upcoming: Future[None] | None = None
            for position, window in enumerate(windows):
                if upcoming is not None:
                    upcoming.result()  # its candidates are stored before this window samples
                    upcoming = None
                if self.config.prefetch and position + 1 < len(windows):
                    upcoming = prefetcher.submit(strategy.prefetch, windows[position + 1], context)
                here = context.with_references(
                    self._references(bootstrap, winners),
                    _short_references(short_bootstrap, short_winners),
                )
                pending = []
                for utterance in window:
                    if utterance.key in results:  # the same sentence twice in one book
                        continue
                    result = self._stored_result(utterance, here)
                    if result is None:
                        pending.append(utterance)
                        continue
                    results[utterance.key] = result
                    if on_result:
                        on_result(result)
                for result in strategy.render_window(pending, here):
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

    def _check_emotions(self, utterances: Sequence[Utterance]) -> None:
        """Fail before any work when a target emotion is not one of the model's labels."""
        emotion = self.verifiers.get("emotion")
        if not isinstance(emotion, LabelChecker):
            return
        for label in dict.fromkeys(u.segment.emotion for u in utterances if u.segment.emotion):
            emotion.resolve_label(label)

    def _references(
        self,
        bootstrap: Mapping[str | None, np.ndarray | None],
        winners: Mapping[str | None, list[np.ndarray]],
    ) -> dict[str | None, np.ndarray | None]:
        """Each voice's reference for the next window: the user's, else its winners' centroid,
        else (no winner yet) its bootstrap centroid. A voice missing here (the render's own, when
        the user gave a reference) falls back to the user's reference."""
        return {
            voice: unit_centroid(winners[voice]) if winners.get(voice) else first
            for voice, first in bootstrap.items()
        }

    def _bootstrap_reference(
        self, first_window: Sequence[Utterance], context: RenderContext
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The book's voice before any winner exists: the centroid of candidate 0 of the first
        window's utterances, and of those of them too short for it (None with fewer than
        ``MIN_SHORT_TAKES``). Those candidates are needed by round one anyway (and come from the
        store on a rerun), so the reference is the same however the run was interrupted."""
        speaker = self.verifiers.get("speaker")
        if not isinstance(speaker, SpeakerEmbedder):
            return None, None
        unique = list({u.key: u for u in first_window}.values())
        stored = context.sample([(u, 0) for u in unique])
        clips = [
            Clip(audio=context.store.load_audio(c), sample_rate=c.sample_rate, text=u.segment.text)
            for u, c in zip(unique, stored, strict=True)
        ]
        with self.stats.timer("verify:speaker"):
            if isinstance(speaker, ShortClipJudge):
                embeddings, speech = speaker.embed_with_speech(clips)
            else:
                embeddings, speech = speaker.embed(clips), [0.0] * len(clips)
        short = [
            e
            for e, s in zip(embeddings, speech, strict=True)
            if self._is_short({"speaker_speech_s": s})
        ]
        return unit_centroid(embeddings), _short_centroid(short)

    def _is_short(self, detail: Mapping[str, Any]) -> bool:
        """Whether a take with this score detail is too short for the book's reference."""
        speaker = self.verifiers.get("speaker")
        seconds = detail.get("speaker_speech_s")
        return bool(
            seconds is not None
            and isinstance(speaker, ShortClipJudge)
            and speaker.is_short(float(seconds))
        )

    def _stored_result(
        self, utterance: Utterance, context: RenderContext
    ) -> UtteranceResult | None:
        """An earlier run's decision for this utterance, if it and its winner's audio exist."""
        decision = context.store.get_decision(utterance.key, context.policy_id_of(utterance))
        if decision is None:
            return None
        records = decision.record.get("candidates", [])
        key = (  # a beam candidate's key is not candidate_key(): read it from the record
            records[decision.winner]["key"]
            if decision.winner < len(records)
            else candidate_key(utterance.key, decision.winner)
        )
        winner = context.store.get_candidate(key)
        if winner is None or winner.audio is None:
            return None
        # Every candidate the manifest and the report will list must be there, not the winner
        # only (a producer may choose any of them): one that is not is decided again, its audio
        # generated again.
        if not context.store.check_listed(r["key"] for r in records if r.get("audio") is not None):
            return None
        result = UtteranceResult.from_decision(utterance, decision)
        with context.lock:  # the prefetch thread counts too
            self.stats.utterances_reused += 1
            context.count_reused([c.key for c in result.candidates])
        return result


def _prefix_backend(config: RenderConfig, generator: Generator) -> PrefixBackend:
    from verified_tts.generators.codec_lm_search import prefix_backend

    backend = prefix_backend(generator)
    if backend is None:
        what = "--search beam" if config.search.beam else "--budget"
        raise UserError(
            f"{what} needs a codec-LM generator (orpheus, llasa or spark) in this process, whose "
            f"tokens can be continued; '{generator.name}' cannot: use --search best-of-n without "
            "--budget with it (and without --ray)"
        )
    return backend


# short takes a voice needs before short clips are judged against their centroid
MIN_SHORT_TAKES = 3


def _short_centroid(vectors: Sequence[np.ndarray]) -> np.ndarray | None:
    return unit_centroid(vectors) if len(vectors) >= MIN_SHORT_TAKES else None


def _short_references(
    bootstrap: Mapping[str | None, np.ndarray | None],
    winners: Mapping[str | None, list[np.ndarray]],
) -> dict[str | None, np.ndarray | None]:
    """Each voice's short-take reference: its short winners' centroid once it has enough of
    them, else the first window's short candidates' (or none)."""
    out = {}
    for voice, first in bootstrap.items():
        centroid = _short_centroid(winners.get(voice, []))
        out[voice] = first if centroid is None else centroid
    return out


def _windows(items: Sequence[Utterance], size: int) -> Iterator[Sequence[Utterance]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _with_utterance(result: UtteranceResult, utterance: Utterance) -> UtteranceResult:
    """A repeated sentence shares its render but keeps its own place in the book."""
    if result.utterance is utterance:
        return result
    return replace(result, utterance=utterance)
