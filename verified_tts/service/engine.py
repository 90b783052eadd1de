"""The service's synthesis: a batch of speech requests through one loaded synthesizer and store.

:class:`SpeechEngine` loads the generator and verifiers once (``Synthesizer.load``) and keeps one
content-addressed store under the service's folder. :meth:`SpeechEngine.speak` takes the requests
a batching window collected, groups those whose options agree (N, adaptive, gates, speed) and runs
each group's utterances as one render (``Synthesizer.run``: the generator's and the verifiers'
batches span every request of the group). Each request's seed and voice enter its utterances'
content keys, so the same text, voice, seed and options give the same winners, and a repeat is
served from the store without synthesis. Every answer is saved as a record (the manifest's
utterance records, every candidate's scores) under its id, for ``GET /v1/audio/speech/{id}``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.errors import UserError
from verified_tts.service.errors import ApiError
from verified_tts.service.request import SpeechRequest
from verified_tts.storage.atomic import write_json_atomic
from verified_tts.storage.keys import stable_hash
from verified_tts.storage.store import Store

__all__ = ["SpeechEngine", "SpeechResult"]

PAUSE_S = 0.3  # between the utterances of one input
_SAFE_ID = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class SpeechResult:
    """One request's answer: the audio, the verdict in brief, and the full record's id."""

    id: str
    audio: np.ndarray
    sample_rate: int
    flagged: bool
    reasons: tuple[str, ...]
    scores: Mapping[str, float]
    seed: int
    candidates: int
    synthesized: int  # candidates generated for this batch's group (0: all from the store)
    batch: int  # requests in the batch this one was spoken in


def _summary_scores(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The winners' metrics, averaged over the input's utterances (one utterance: its own)."""
    sums: dict[str, list[float]] = {}
    for record in records:
        winner = record["candidates"][record["winner"]]
        for name, value in winner.get("scores", {}).items():
            if isinstance(value, int | float):
                sums.setdefault(name, []).append(float(value))
        if winner.get("score") is not None:
            sums.setdefault("score", []).append(float(winner["score"]))
    return {name: round(float(np.mean(values)), 4) for name, values in sorted(sums.items())}


class SpeechEngine:
    """A loaded synthesizer over the store in ``home``; :meth:`speak` is called one batch at a
    time (the batcher's one worker thread)."""

    def __init__(self, config: Any, home: Path, synthesizer: Any = None) -> None:
        from verified_tts.pipeline import Synthesizer

        self.config = config
        self.home = Path(home)
        (self.home / "records").mkdir(parents=True, exist_ok=True)
        self.base = synthesizer if synthesizer is not None else Synthesizer.load(config)
        self.store = Store(self.home / "store")
        self._speeds: dict[float, Any] = {1.0: self.base.generator}
        self._lock = threading.Lock()

    # -- what this server speaks ------------------------------------------------------------------
    def own_voice(self) -> str:
        from verified_tts.generators.voice_set import voice_name

        return voice_name(self.base.generator, self.config.generator.voice, self.config.voices_dir)

    def voices(self) -> list[dict[str, Any]]:
        from verified_tts.voices import catalogue

        own = self.own_voice()
        listed = [{"id": "default", "name": own, "default": True}]
        for voice in catalogue(self.config.voices_dir):
            if voice.available and voice.generator != "espeak" or voice.name == own:
                listed.append({**voice.as_dict(), "id": voice.name, "default": voice.name == own})
        return listed

    def segment_voice(self, name: str) -> str | None:
        """The voice a request's lines carry (None: the server's own), or a 400 naming it."""
        if name in ("default", self.own_voice()):
            return None
        from verified_tts.voices import find_voice

        try:
            return find_voice(name, self.config.voices_dir).name
        except UserError as error:
            raise ApiError(400, f"voice: {error}; GET /v1/voices lists them", "voice") from None

    # -- speaking ---------------------------------------------------------------------------------
    def _generator(self, speed: float) -> Any:
        if speed in self._speeds:
            return self._speeds[speed]
        if self.base.generator.name != "piper":
            raise ApiError(400, f"speed: the voice {self.own_voice()} speaks at 1.0 only", "speed")
        from verified_tts.generators import load_generator

        length = float(self.base.generator.scales[1]) / speed
        options = replace(self.config.generator.options, length_scale=length)
        if len(self._speeds) > 4:  # a few speeds loaded at once, not one per request
            self._speeds.pop(next(s for s in self._speeds if s != 1.0))
        generator = load_generator(replace(self.config.generator, options=options))
        self._speeds[speed] = generator
        return generator

    def _synthesizer(self, first: SpeechRequest) -> Any:
        from verified_tts.config import build_config

        table: dict[str, Any] = {}
        gates = first.gates_table()
        if gates:
            table["selection"] = {"gates": gates}
        overrides = {"candidates": first.n, "adaptive": first.adaptive}
        try:
            config = build_config(
                table,
                generator=self.config.generator.name,
                model=self.config.generator.model,
                voice=self.config.generator.voice,
                **{k: v for k, v in overrides.items() if v is not None},
            )
        except UserError as error:
            raise ApiError(400, f"gates: {error}", "gates") from None
        config = replace(config, verifiers=self.config.verifiers, generator=self.config.generator)
        if not gates:
            config = replace(config, selection=self.config.selection)
        from verified_tts.pipeline import Synthesizer

        synthesizer = self.base.variant(config)
        if first.speed != 1.0:
            synthesizer = Synthesizer(self._generator(first.speed), self.base.verifiers, config)
        synthesizer.start_run()
        return synthesizer

    def _segments(self, request: SpeechRequest) -> list[Any]:
        from verified_tts.text.book import parse_book
        from verified_tts.text.lexicon import Lexicon, apply_lexicon, make_entry

        book = parse_book(request.input, max_chars=self.config.utterance_chars())
        table = request.lexicon_table()
        if table:
            try:
                entries = [
                    make_entry(p, v, regex=True, where="lexicon.patterns")
                    for p, v in table.get("patterns", {}).items()
                ] + [
                    make_entry(w, v, regex=False, where="lexicon.words")
                    for w, v in table.get("words", {}).items()
                ]
            except UserError as error:
                raise ApiError(400, str(error), "lexicon") from None
            book = apply_lexicon(book, Lexicon(tuple(entries), "request"))
        if not book.segments:
            raise ApiError(400, "input: has nothing to say (no words)", "input")
        voice = self.segment_voice(request.voice)
        return [replace(s, voice=voice) for s in book.segments]

    def speak(self, requests: Sequence[SpeechRequest]) -> list[SpeechResult | ApiError]:
        """Answer every request: its result, or the :class:`ApiError` that refuses it alone."""
        answers: list[SpeechResult | ApiError | None] = [None] * len(requests)
        groups: dict[tuple[Any, ...], list[int]] = {}
        for index, request in enumerate(requests):
            groups.setdefault(request.options(), []).append(index)
        with self._lock:
            for indices in groups.values():
                try:
                    self._speak_group(
                        [requests[i] for i in indices], indices, answers, len(requests)
                    )
                except ApiError as error:
                    for i in indices:
                        answers[i] = answers[i] or error
        return [a if a is not None else ApiError(500, "no answer was made") for a in answers]

    def _speak_group(
        self,
        group: Sequence[SpeechRequest],
        indices: Sequence[int],
        answers: list[SpeechResult | ApiError | None],
        batch: int,
    ) -> None:
        from verified_tts.output.manifest import UtteranceRecord
        from verified_tts.output.run_manifest import gate_bounds

        synthesizer = self._synthesizer(group[0])
        planned: dict[int, list[Any]] = {}
        for request, index in zip(group, indices, strict=True):
            try:
                segments = self._segments(request)
                seed = self.config.seed if request.seed is None else request.seed
                synthesizer.config = replace(synthesizer.config, seed=seed)
                planned[index] = synthesizer.plan(segments)
            except ApiError as error:
                answers[index] = error
            except UserError as error:
                answers[index] = ApiError(400, f"input: {error}", "input")
        everything = [u for utterances in planned.values() for u in utterances]
        if not everything:
            return
        try:
            results = synthesizer.run(everything, self.store)
        except UserError as error:
            for index in planned:
                answers[index] = ApiError(400, str(error))
            return
        by_key = {r.utterance.key: r for r in results}
        bounds = gate_bounds(synthesizer.policy.gates)
        made = synthesizer.stats.candidates_generated
        for request, index in zip(group, indices, strict=True):
            if index not in planned:
                continue
            mine = [by_key[u.key] for u in planned[index]]
            records = [UtteranceRecord.from_result(r, bounds).to_json() for r in mine]
            seed = self.config.seed if request.seed is None else request.seed
            answer_id = stable_hash(
                {
                    "utterances": [u.key for u in planned[index]],
                    "policy": synthesizer.policy_id(synthesizer.config.candidates),
                    "format": request.response_format,
                }
            )
            audio = self._join(mine)
            reasons = tuple(
                reason["text"]
                for record in records
                for reason in record.get("reasons", ())
                if reason.get("flag", True)
            )
            result = SpeechResult(
                id=answer_id,
                audio=audio,
                sample_rate=synthesizer.generator.sample_rate,
                flagged=any(r.flagged for r in mine),
                reasons=reasons,
                scores=_summary_scores(records),
                seed=seed,
                candidates=sum(len(r.candidates) for r in mine),
                synthesized=made,
                batch=batch,
            )
            write_json_atomic(
                self.home / "records" / f"{answer_id}.json",
                {
                    "id": answer_id,
                    "input": request.input,
                    "voice": request.voice,
                    "seed": seed,
                    "n": synthesizer.config.candidates,
                    "flagged": result.flagged,
                    "reasons": list(reasons),
                    "scores": dict(result.scores),
                    "sample_rate": result.sample_rate,
                    "utterances": records,
                },
            )
            answers[index] = result

    def _join(self, results: Sequence[Any]) -> np.ndarray:
        parts: list[np.ndarray] = []
        for position, result in enumerate(results):
            stored = self.store.get_candidate(result.winner_candidate.key)
            parts.append(np.asarray(self.store.load_audio(stored), dtype=np.float32).reshape(-1))
            if position + 1 < len(results):
                parts.append(np.zeros(int(PAUSE_S * stored.sample_rate), dtype=np.float32))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)

    def record(self, answer_id: str) -> dict[str, Any]:
        """The saved record of an answer, or a 404."""
        if not answer_id or set(answer_id) - _SAFE_ID or len(answer_id) > 128:
            raise ApiError(404, f"no speech record {answer_id[:80]!r}", "id")
        path = self.home / "records" / f"{answer_id}.json"
        if not path.is_file():
            raise ApiError(404, f"no speech record {answer_id}", "id")
        return json.loads(path.read_text(encoding="utf-8"))
