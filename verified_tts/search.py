"""Verifier-guided partial (beam) search over codec-LM outputs, beside best-of-N.

Llasa's best inference-time setting ("partial PRM (speaker similarity) + ORM (WER)", arXiv
2502.04128) grows W beams a chunk of C seconds at a time: every live beam gets E seeded
continuations (one engine request each, prompt = the utterance's prompt + the beam's tokens, so
the engine's prefix cache shares the work), the partial audio of every child is decoded and scored
by the *process* verifiers (speaker similarity to the voice reference; the target emotion when the
utterance has one; a partial-transcript check against the start of the text), the best W children
survive, and children that ended retire as candidates. The final pick among them is the render's
own selection policy on the full verifiers, as for best-of-N. The seed of a continuation derives
from (utterance key, step, beam, expansion); the beams are committed to the store after every
step, so a search is reproducible and a killed one resumes at its last finished step. Tokens
generated per utterance are counted and can be capped (``budget_s``): a step expands only as many
beams as its worst case (every continuation running its whole chunk) still fits in, so the cap is
never passed. Best-of-N is unchanged; with a budget it samples only the candidates whose
worst case fits.

The partial-transcript check: the partial audio ends wherever the chunk ended, possibly inside a
word, and the model may speak slower or faster than the text's length suggests. So the
transcript's last word is dropped, and the rest is compared with the reference's first k words
for every k within two words of its length, keeping the best alignment: a skipped or wrong word
costs one error per transcript word, a different speaking rate costs nothing.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from verified_tts.errors import UserError
from verified_tts.generators.base import SynthesisRequest
from verified_tts.keys import stable_hash
from verified_tts.options.run import PROCESS_VERIFIERS, STRATEGIES, SearchOptions

if TYPE_CHECKING:
    from verified_tts.generators.codec_lm_search import PrefixBackend
    from verified_tts.pipeline import Synthesizer, Utterance, UtteranceResult
    from verified_tts.store import Store

__all__ = [
    "PROCESS_VERIFIERS",
    "STRATEGIES",
    "BeamSearch",
    "SearchOptions",
    "continuation_seed",
    "parse_arm",
    "prefix_error",
]

_SEED_MASK = (1 << 31) - 1


def parse_arm(text: str) -> tuple[str, int, int]:
    """``best-of-n:8`` -> ("best-of-n", 8, 1); ``beam:2x4`` -> ("beam", 2, 4) (width x E)."""
    strategy, _, size = text.partition(":")
    try:
        if strategy == "best-of-n":
            n = int(size)
            if n >= 1:
                return strategy, n, 1
        elif strategy == "beam":
            width, _, expansions = size.partition("x")
            w, e = int(width), int(expansions)
            if w >= 1 and e >= 1:
                return strategy, w, e
    except ValueError:
        pass
    raise UserError(f"--arm '{text}' is not an arm: write best-of-n:N or beam:WxE (e.g. beam:2x4)")


def continuation_seed(utterance: str, step: int, beam: int, expansion: int) -> int:
    """Seed of expansion ``expansion`` of live beam ``beam`` at search step ``step``."""
    digest = hashlib.sha256(f"{utterance}:search:{step}:{beam}:{expansion}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & _SEED_MASK


def _edit_distance(a: Sequence[str], b: Sequence[str]) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


def prefix_error(text: str, transcript: str) -> float:
    """Errors per transcript word of a partial transcript against the start of ``text``.

    See the module docstring: the last transcript word is dropped (it may be cut), the best of
    the reference prefixes within two words of the transcript's length is kept. Nothing heard
    yet is no error (silence is the speaker and final checks' business).
    """
    from verifiers.textnorm import normalize

    heard = normalize(transcript).split()[:-1]
    if not heard:
        return 0.0
    words = normalize(text).split()
    lengths = range(max(0, len(heard) - 2), min(len(words), len(heard) + 2) + 1)
    best = min((_edit_distance(words[:k], heard) for k in lengths), default=len(heard))
    return best / len(heard)


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
    request: SynthesisRequest  # the utterance's request (seed replaced per continuation)
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
    """Runs beam search for the utterances of one window on a synthesizer's loaded models."""

    def __init__(self, synthesizer: Synthesizer, backend: PrefixBackend) -> None:
        self.synth = synthesizer
        self.backend = backend
        self.options: SearchOptions = synthesizer.config.search
        self.chunk = backend.chunk_tokens(self.options.chunk_s)
        tps = 1.0 / backend.seconds_per_token
        budget = self.options.budget_s
        self.budget = None if budget is None else int(budget * tps)

    # ------------------------------------------------------------------------------------------
    def render_window(
        self,
        pending: Sequence[Utterance],
        store: Store,
        policy_id: str,
        references: Mapping[str | None, np.ndarray | None],
    ) -> Iterator[UtteranceResult]:
        states = [self._start(u, store, references) for u in pending]
        while True:
            active = [s for s in states if s.live]
            if not active:
                break
            self._step(active, store, references)
        yield from self._finish(states, store, policy_id, references)

    def _reference(self, utterance: Utterance, references: Mapping[str | None, Any]) -> Any:
        return references.get(utterance.voice, self.synth.voice_reference)

    def _start(self, utterance: Utterance, store: Store, references: Mapping) -> _State:
        reference = self._reference(utterance, references)
        ref_id = (
            None if reference is None else stable_hash(np.round(np.asarray(reference), 4).tolist())
        )
        search_id = stable_hash(
            {
                "search": self.options.identity(),
                "process": {
                    n: dict(v.identity())
                    for n in self.options.process
                    if (v := self.synth.verifiers.get(n)) is not None
                },  # fmt: skip
                "reference": ref_id,
            }
        )
        request = SynthesisRequest(
            utterance_key=utterance.key,
            index=0,
            seed=0,
            text=utterance.segment.spoken,
            voice=utterance.voice,
            emotion=utterance.segment.emotion,
        )
        cap = self.backend.max_tokens(request)
        state = _State(utterance, request, search_id, cap)
        stored = store.last_search_step(utterance.key, search_id)
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

    def _step(self, states: Sequence[_State], store: Store, references: Mapping) -> None:
        from verified_tts.generators.codec_lm_search import Extension

        synth = self.synth
        items: list[tuple[_State, _Beam, str, Extension]] = []
        for state in states:
            plan = self._plan(state)
            if not plan:  # the budget (or the length cap) allows no continuation: stop here
                for beam in state.live:
                    beam.reason = "budget" if self.budget is not None else "length"
                state.finished.extend(state.live)
                state.live = []
                state.step += 1
                store.put_search_step(
                    state.utterance.key, state.search_id, state.step, state.record()
                )
                continue
            step = state.step + 1
            for rank, expansion, max_new in plan:
                beam = state.live[rank]
                seed = continuation_seed(state.utterance.key, step, rank, expansion)
                request = SynthesisRequest(
                    **{**asdict(state.request), "seed": seed, "index": rank * 1000 + expansion}
                )
                child = f"s{step}b{rank}e{expansion}"
                items.append((state, beam, child, Extension(request, tuple(beam.tokens), max_new)))
        if not items:
            return
        t0 = time.perf_counter()
        extended = self.backend.extend([item for *_, item in items])
        synth.stats.seconds["search:generate"] += time.perf_counter() - t0
        children: list[tuple[_State, _Beam]] = []
        for (state, parent, child_id, _), result in zip(items, extended, strict=True):
            new = list(result.tokens)
            state.spent += len(new)
            state.cached += result.cached_tokens
            state.prompt += result.prompt_tokens
            synth.stats.tokens_generated += len(new)
            child = _Beam(child_id, parent.tokens + new, list(parent.path))
            if result.stopped:
                child.reason = "stop"
            elif len(child.tokens) >= state.cap:
                child.reason = "length"
            children.append((state, child))
        scores = self._score(children, references, [item.request for *_, item in items])
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
            state.step += 1
            store.put_search_step(state.utterance.key, state.search_id, state.step, state.record())

    def _score(
        self,
        children: Sequence[tuple[_State, _Beam]],
        references: Mapping,
        requests: Sequence[SynthesisRequest],
    ) -> list[tuple[dict[str, float], float]]:
        """Process metrics and score of every child's partial audio, one batch per verifier."""
        from verifiers import Clip

        synth = self.synth
        t0 = time.perf_counter()
        audio = self.backend.decode(
            [
                (request, child.tokens)
                for request, (_, child) in zip(requests, children, strict=True)
            ]
        )
        synth.stats.seconds["search:decode"] += time.perf_counter() - t0
        clips = []
        for (state, _), candidate in zip(children, audio, strict=True):
            u = state.utterance
            clips.append(
                Clip(
                    audio=candidate.audio,
                    sample_rate=candidate.sample_rate,
                    text="",  # the transcript is checked against the text's start below
                    spoken=u.segment.spoken,
                    emotion=u.segment.emotion,
                    speaker_reference=self._reference(u, references),
                    info=candidate.info,
                )
            )
        metrics: list[dict[str, float]] = [{} for _ in clips]
        for name in self.options.process:
            verifier = synth.verifiers.get(name)
            if verifier is None:
                continue
            chosen = [i for i, c in enumerate(clips) if name != "emotion" or c.emotion]
            if not chosen:
                continue
            t1 = time.perf_counter()
            scored = verifier.score([clips[i] for i in chosen])
            synth.stats.seconds[f"search:score:{name}"] += time.perf_counter() - t1
            for i, score in zip(chosen, scored, strict=True):
                if name == "wer":
                    text = children[i][0].utterance.segment.text
                    transcript = str(score.detail.get("transcript", ""))
                    metrics[i]["prefix_error"] = prefix_error(text, transcript)
                elif name in score.metrics:
                    metrics[i][name] = float(score.metrics[name])
        o = self.options
        results = []
        for m in metrics:
            value = (
                o.speaker_weight * m.get("speaker", 0.0)
                + o.emotion_weight * m.get("emotion", 0.0)
                - o.text_weight * m.get("prefix_error", 0.0)
            )
            results.append(({k: round(v, 4) for k, v in m.items()}, value))
        return results

    # ------------------------------------------------------------------------------------------
    def _finish(
        self,
        states: Sequence[_State],
        store: Store,
        policy_id: str,
        references: Mapping,
    ) -> Iterator[UtteranceResult]:
        """Decode every finished beam in full, store it as a candidate, judge as best-of-N."""
        from verified_tts.keys import candidate_seed

        synth = self.synth
        wanted: list[tuple[Utterance, int]] = []
        stored = []
        for state in states:
            key = state.utterance.key
            for index, beam in enumerate(state.finished):
                ckey = f"{key}-beam{state.search_id[:8]}-{index:03d}"
                candidate = store.get_candidate(ckey)
                if candidate is None:
                    request = SynthesisRequest(
                        **{
                            **asdict(state.request),
                            "index": index,
                            "seed": candidate_seed(key, index),
                        }  # fmt: skip
                    )
                    t0 = time.perf_counter()
                    [clip] = self.backend.decode([(request, beam.tokens)])
                    synth.stats.seconds["search:decode"] += time.perf_counter() - t0
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
                    candidate = store.put_candidate(
                        ckey,
                        utterance=key,
                        index=index,
                        seed=clip.seed,
                        audio=clip.audio,
                        sample_rate=clip.sample_rate,
                        info=info,
                    )
                    synth.stats.candidates_generated += 1
                    synth.stats.audio_seconds_generated += clip.duration_s
                wanted.append((state.utterance, index))
                stored.append(candidate)
        scored = synth._verify(wanted, stored, store, references)
        by_key: dict[str, list[Any]] = {s.utterance.key: [] for s in states}
        for (utterance, _), item in zip(wanted, scored, strict=True):
            by_key[utterance.key].append(item)
        from verified_tts.selection import judge

        for state in states:
            items = by_key[state.utterance.key]
            results = [r for r, _ in items]
            embeddings = [e for _, e in items]
            judgements = [judge(r.metrics, synth.policy) for r in results]
            yield synth._decide(state.utterance, results, embeddings, judgements, store, policy_id)
