"""Verifier-guided partial (beam) search over codec-LM outputs: the ``--search beam`` strategy.

Llasa's best inference-time setting ("partial PRM (speaker similarity) + ORM (WER)", arXiv
2502.04128) grows W beams a chunk of C seconds at a time: every live beam gets E seeded
continuations (one engine request each, prompt = the utterance's prompt + the beam's tokens, so
the engine's prefix cache shares the work), the partial audio of every child is decoded and scored
by the *process* verifiers (speaker similarity to the voice reference; the target emotion when the
utterance has one; a partial-transcript check against the start of the text,
:func:`~verified_tts.selection.search.prefix_error`), the best W children survive, and children that
ended retire as candidates. The final pick among them is the render's own selection policy on the
full verifiers, through the same :class:`~verified_tts.selection.strategy.RenderContext` as
best-of-N. The seeds and store keys are :mod:`verified_tts.storage.keys`' (a continuation's seed
derives from (utterance key, step, beam, expansion)); the beams are committed to the store after
every step, so a search is reproducible and a killed one resumes at its last finished step. Tokens
generated per utterance are counted and can be capped (``budget_s``): a step expands only as many
beams as its worst case (every continuation running its whole chunk) still fits in, so the cap is
never passed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verified_tts.generators.base import SynthesisRequest
from verified_tts.generators.codec_lm_search import Extension, PrefixBackend
from verified_tts.selection.scoring import score_clips
from verified_tts.selection.search import SearchOptions, prefix_error
from verified_tts.selection.strategy import RenderContext, Scored
from verified_tts.storage.keys import beam_candidate_key, continuation_seed, search_key
from verified_tts.storage.results import Utterance, UtteranceResult
from verifiers import Clip

__all__ = ["BeamSearch"]


@dataclass
class _Beam:
    id: str
    tokens: list[int]
    path: list[dict[str, Any]] = field(default_factory=list)  # per step: id, scores, score
    score: float = 0.0
    reason: str | None = None  # why it ended: stop, length, budget

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "tokens": self.tokens, "path": self.path, "score": self.score,
                "reason": self.reason}  # fmt: skip

    @classmethod
    def load(cls, data: Mapping[str, Any]) -> _Beam:
        return cls(data["id"], list(data["tokens"]), list(data["path"]), float(data["score"]),
                   data.get("reason"))  # fmt: skip


@dataclass(eq=False)  # identity: one per utterance in a window
class _State:
    utterance: Utterance
    search_id: str
    cap: int  # most tokens one beam may have
    step: int = 0
    spent: int = 0  # tokens generated so far
    cached: int = 0  # prompt tokens the prefix cache served
    prompt: int = 0  # prompt tokens sent
    pruned: int = 0
    live: list[_Beam] = field(default_factory=list)
    finished: list[_Beam] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {
            "spent": self.spent,
            "cached": self.cached,
            "prompt": self.prompt,
            "pruned": self.pruned,
            "live": [b.record() for b in self.live],
            "finished": [b.record() for b in self.finished],
        }


class BeamSearch:
    """Beam search for the utterances of a window, on a codec LM's prefix backend."""

    name = "beam"
    bootstraps_reference = False  # no best-of-N candidate 0 to take a first reference from

    def __init__(self, options: SearchOptions, backend: PrefixBackend) -> None:
        self.options = options
        self.backend = backend
        self.chunk = backend.chunk_tokens(options.chunk_s)
        self.budget = None if options.budget_s is None else backend.tokens_in(options.budget_s)

    def prefetch(self, window: Sequence[Utterance], context: RenderContext) -> None:
        """Nothing to sample ahead: a search's next requests depend on this window's scores."""

    def render_window(
        self, pending: Sequence[Utterance], context: RenderContext
    ) -> Iterator[UtteranceResult]:
        states = [self._start(u, context) for u in pending]
        while True:
            active = [s for s in states if s.live]
            if not active:
                break
            self._step(active, context)
        yield from self._finish(states, context)

    def _start(self, utterance: Utterance, context: RenderContext) -> _State:
        process = {
            name: verifier.identity()
            for name in self.options.process
            if (verifier := context.verifiers.get(name)) is not None
        }
        search_id = search_key(self.options.identity(), process, context.reference(utterance))
        state = _State(utterance, search_id, self.backend.max_tokens(utterance.request(0)))
        stored = context.store.last_search_step(utterance.key, search_id)
        if stored is None:
            state.live = [_Beam("root", [])]
            return state
        state.step, record = stored
        state.spent, state.cached = int(record["spent"]), int(record["cached"])
        state.prompt, state.pruned = int(record["prompt"]), int(record["pruned"])
        state.live = [_Beam.load(b) for b in record["live"]]
        state.finished = [_Beam.load(b) for b in record["finished"]]
        return state

    def _plan(self, state: _State) -> list[tuple[int, int, int]]:
        """(beam rank, expansion, max new tokens) of this step, within the budget."""
        plan = []
        left = None if self.budget is None else self.budget - state.spent
        for expansion in range(self.options.expansions):  # spread a short budget over beams
            for rank, beam in enumerate(state.live):
                room = state.cap - len(beam.tokens)
                max_new = min(self.chunk, room - room % self.backend.frame_tokens)
                if max_new <= 0:
                    continue
                if left is not None:
                    if max_new > left:
                        continue
                    left -= max_new
                plan.append((rank, expansion, max_new))
        return sorted(plan)

    def _commit(self, state: _State, context: RenderContext) -> None:
        state.step += 1
        record = state.record()
        context.store.put_search_step(state.utterance.key, state.search_id, state.step, record)

    def _step(self, states: Sequence[_State], context: RenderContext) -> None:
        items: list[tuple[_State, _Beam, str, Extension]] = []
        for state in states:
            plan = self._plan(state)
            if not plan:  # the budget (or the length cap) allows no continuation: stop here
                for beam in state.live:
                    beam.reason = "budget" if self.budget is not None else "length"
                state.finished.extend(state.live)
                state.live = []
                self._commit(state, context)
                continue
            step = state.step + 1
            for rank, expansion, max_new in plan:
                beam = state.live[rank]
                seed = continuation_seed(state.utterance.key, step, rank, expansion)
                request = state.utterance.request(rank * 1000 + expansion, seed=seed)
                child = f"s{step}b{rank}e{expansion}"
                items.append((state, beam, child, Extension(request, tuple(beam.tokens), max_new)))
        if not items:
            return
        with context.stats.timer("search:generate"):
            extended = self.backend.extend([item for *_, item in items])
        children: list[tuple[_State, _Beam]] = []
        for (state, parent, child_id, _), result in zip(items, extended, strict=True):
            new = list(result.tokens)
            state.spent += len(new)
            state.cached += result.cached_tokens
            state.prompt += result.prompt_tokens
            context.stats.tokens_generated += len(new)
            child = _Beam(child_id, parent.tokens + new, list(parent.path))
            if result.stopped:
                child.reason = "stop"
            elif len(child.tokens) >= state.cap:
                child.reason = "length"
            children.append((state, child))
        scores = self._score(children, [item.request for *_, item in items], context)
        for (state, child), (metrics, score) in zip(children, scores, strict=True):
            child.score = score
            child.path.append({"id": child.id, "step": state.step + 1, "scores": metrics,
                               "score": round(score, 4)})  # fmt: skip
        for state in dict.fromkeys(s for s, _ in children):
            mine = [c for s, c in children if s is state]
            # ties keep the lower (earlier) child, so the order never depends on timing
            ranked = sorted(range(len(mine)), key=lambda i: (-mine[i].score, i))
            kept = [mine[i] for i in ranked[: self.options.width]]
            state.pruned += len(mine) - len(kept)
            state.finished.extend(b for b in kept if b.reason is not None)
            state.live = [b for b in kept if b.reason is None]
            self._commit(state, context)

    def _score(
        self,
        children: Sequence[tuple[_State, _Beam]],
        requests: Sequence[SynthesisRequest],
        context: RenderContext,
    ) -> list[tuple[dict[str, float], float]]:
        """Process metrics and score of every child's partial audio, one batch per verifier."""
        with context.stats.timer("search:decode"):
            audio = self.backend.decode(
                [
                    (request, child.tokens)
                    for request, (_, child) in zip(requests, children, strict=True)
                ]
            )
        clips = [
            Clip(
                audio=candidate.audio,
                sample_rate=candidate.sample_rate,
                text="",  # the transcript is checked against the text's start below
                spoken=state.utterance.segment.spoken,
                emotion=state.utterance.segment.emotion,
                speaker_reference=context.reference(state.utterance),
                # a prefix is short by nature and its siblings are only ranked, never gated:
                # every prefix is compared with the one reference, however short it is
                short_reference=context.reference(state.utterance),
                info=candidate.info,
            )
            for (state, _), candidate in zip(children, audio, strict=True)
        ]
        names = [name for name in self.options.process if context.verifiers.get(name) is not None]
        if not any(clip.emotion for clip in clips):  # the emotion verifier would score nothing
            names = [name for name in names if name != "emotion"]
        verifiers = [context.verifiers.get(name) for name in names]
        merged = score_clips(
            [v for v in verifiers if v is not None],
            clips,
            timer=lambda name: context.stats.timer(f"search:score:{name}"),
        )
        o = self.options
        results = []
        for (state, _), scores in zip(children, merged, strict=True):
            metrics: dict[str, float] = {}
            for name in names:  # in the order of [search] process, as the store records them
                if name == "wer":
                    transcript = str(scores.detail.get("transcript", ""))
                    metrics["prefix_error"] = prefix_error(state.utterance.segment.text, transcript)
                elif name in scores.metrics:
                    metrics[name] = float(scores.metrics[name])
            value = (
                o.speaker_weight * metrics.get("speaker", 0.0)
                + o.emotion_weight * metrics.get("emotion", 0.0)
                - o.text_weight * metrics.get("prefix_error", 0.0)
            )
            results.append(({k: round(v, 4) for k, v in metrics.items()}, value))
        return results

    # ------------------------------------------------------------------------------------------
    def _finish(
        self, states: Sequence[_State], context: RenderContext
    ) -> Iterator[UtteranceResult]:
        """Decode every finished beam in full, store it as a candidate, judge as best-of-N."""
        wanted: list[tuple[Utterance, int]] = []
        stored = []
        for state in states:
            key = state.utterance.key
            for index, beam in enumerate(state.finished):
                ckey = beam_candidate_key(key, state.search_id, index)
                candidate = context.store.get_candidate(ckey)
                if candidate is None:
                    candidate = self._store_beam(state, index, beam, ckey, context)
                wanted.append((state.utterance, index))
                stored.append(candidate)
        scored = context.verify(wanted, stored)
        by_key: dict[str, list[Scored]] = {s.utterance.key: [] for s in states}
        for (utterance, _), item in zip(wanted, scored, strict=True):
            by_key[utterance.key].append(item)
        for state in states:
            items = by_key[state.utterance.key]
            yield context.decide(state.utterance, [r for r, _ in items], [e for _, e in items])

    def _store_beam(
        self, state: _State, index: int, beam: _Beam, key: str, context: RenderContext
    ) -> Any:
        """Decode finished beam ``index`` in full and store it as a candidate with its path."""
        request = state.utterance.request(index)
        with context.stats.timer("search:decode"):
            [clip] = self.backend.decode([(request, beam.tokens)])
        parent = beam.path[-2]["id"] if len(beam.path) > 1 else "root"
        info = {
            **clip.info,
            "finish_reason": beam.reason,
            "search": {
                "strategy": "beam",
                "beam": beam.id,
                "parent": parent,
                "step": len(beam.path),
                "path": beam.path,
                "search_tokens": state.spent,
                "cached_prompt_tokens": state.cached,
                "prompt_tokens": state.prompt,
                "pruned": state.pruned,
            },
        }
        candidate = context.store.put_candidate(
            key,
            utterance=state.utterance.key,
            index=index,
            seed=clip.seed,
            audio=clip.audio,
            sample_rate=clip.sample_rate,
            info=info,
        )
        context.stats.candidates_generated += 1
        context.stats.audio_seconds_generated += clip.duration_s
        return candidate
