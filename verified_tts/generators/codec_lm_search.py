"""Prefix continuation and partial decoding: what a search over codec-LM outputs asks of one.

Beam search (:mod:`verified_tts.selection.beam_search`) grows each beam a chunk at a time. A
continuation is one engine request whose prompt is the utterance's prompt followed by the beam's
tokens so far, so every expansion of a beam shares that prefix and the engine's prefix cache serves
it (the count of prompt tokens it served comes back per request, from the engine's own output). The
layout's grammar resumes where the prefix left it (:func:`~.codec_lm_logits.resumed_grammar`), so an
Orpheus continuation still starts on a frame boundary. :class:`PrefixBackend` wraps a loaded
:class:`~.codec_lm.CodecLMGenerator`; the same tokens decode to the same audio whether they came in
one request or in several, which is what makes a partial decode a fair preview of a beam.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from verified_tts.errors import UserError
from verified_tts.generators.base import Candidate, SynthesisRequest
from verified_tts.generators.codec_lm import CodecLMGenerator, Job, token_budget

__all__ = ["Extended", "Extension", "PrefixBackend", "Searchable", "prefix_backend"]


@dataclass(frozen=True)
class Extension:
    """Continue ``prefix`` (the beam's tokens, no stop id) by at most ``max_new`` tokens."""

    request: SynthesisRequest  # its seed is the continuation's seed
    prefix: tuple[int, ...]
    max_new: int


@dataclass(frozen=True)
class Extended:
    """The new tokens of one continuation (ending with the stop id when it stopped)."""

    tokens: tuple[int, ...]
    stopped: bool
    prompt_tokens: int
    cached_tokens: int  # prompt tokens the engine's prefix cache served


class PrefixBackend:
    """Continuations and decodes of token prefixes on one loaded codec-LM generator."""

    def __init__(self, generator: CodecLMGenerator) -> None:
        self.generator = generator
        self.layout = generator.layout
        self.frame_tokens = int(generator.options.FRAME_TOKENS)
        self.decode_s = 0.0  # codec time spent on decodes through this backend
        self.seconds_per_token = 1.0 / float(self.layout.tokens_per_second)

    def chunk_tokens(self, seconds: float) -> int:
        """Whole frames covering ``seconds`` of audio (at least one frame)."""
        frames = max(1, round(seconds * self.layout.tokens_per_second / self.frame_tokens))
        return frames * self.frame_tokens

    def tokens_in(self, seconds: float) -> int:
        """The tokens of ``seconds`` of audio (whole tokens, rounded down: a budget's count)."""
        return int(seconds * (1.0 / self.seconds_per_token))

    def max_tokens(self, request: SynthesisRequest) -> int:
        """The most tokens one candidate of this utterance may have: best-of-N's cap, within the
        engine's context after the prompt, so a beam that reaches it ends there instead of asking
        the engine for a continuation that has no room."""
        generator = self.generator
        budget = token_budget(request.text, generator.options, self.layout.tokens_per_second)
        room = generator.max_model_len() - len(generator.prompt_ids(request))
        if room < self.frame_tokens:  # the first continuation says so, in the generator's words
            return budget
        return min(budget, self.frame_tokens * (room // self.frame_tokens))

    def extend(self, items: Sequence[Extension]) -> list[Extended]:
        """Every continuation as one engine request, all in the generator's bounded window."""
        from verified_tts.generators.codec_lm_grammar import resumed_grammar

        if not items:
            return []
        generator = self.generator
        jobs = []
        for item in items:
            prompt = [*generator.prompt_ids(item.request), *item.prefix]
            grammar = None
            if generator.options.constrained:
                spec = self.layout.grammar(item.request)
                try:
                    grammar = resumed_grammar(spec, item.prefix)
                except ValueError as exc:
                    raise UserError(
                        f"utterance {item.request.utterance_key}: a stored beam does not fit "
                        f"the {self.layout.name} grammar; delete the store's search steps"
                    ) from exc
            params = generator.sampling_params(
                item.request, len(prompt), budget=item.max_new, grammar=grammar
            )
            jobs.append(Job(prompt, params))
        outputs: dict[int, Any] = {}
        cached: dict[int, int] = {}

        def finished(done: list[tuple[int, Any]]) -> None:
            outputs.update(done)

        generator.drive(jobs, finished, cached)
        stops = set(self.layout.stop_ids())
        result = []
        for i, job in enumerate(jobs):
            tokens = tuple(int(t) for t in outputs[i].token_ids)
            stopped = bool(tokens) and tokens[-1] in stops
            result.append(Extended(tokens, stopped, len(job.prompt), cached.get(i, 0)))
        return result

    def decode(self, items: Sequence[tuple[SynthesisRequest, Sequence[int]]]) -> list[Candidate]:
        """Audio of each (request, tokens): a partial beam or a finished one, decoded alike."""
        generator = self.generator
        parsed = [self.layout.parse(list(tokens), request) for request, tokens in items]
        t0 = time.perf_counter()
        audios = generator.codec.decode_batch(
            [(p.codes, request.seed) for (request, _), p in zip(items, parsed, strict=True)]
        )
        self.decode_s += time.perf_counter() - t0
        candidates = []
        for (request, tokens), p, audio in zip(items, parsed, audios, strict=True):
            if p.trim_samples:
                audio = audio[p.trim_samples :]
            if audio.size == 0:  # no whole frame yet: one frame of silence, as sample() does
                audio = np.zeros(self.layout.samples_per_frame, dtype=np.float32)
            digest = hashlib.sha256(np.asarray(tokens, dtype=np.int64).tobytes())
            info = {
                "tokens": len(tokens),
                "token_digest": digest.hexdigest()[:16],
                "frames": p.frames,
                "dropped_frames": p.dropped,
                "stopped": p.stopped,
                "constrained": generator.options.constrained,
                **self.layout.info(request),
            }
            candidates.append(
                Candidate(
                    utterance_key=request.utterance_key,
                    index=request.index,
                    seed=request.seed,
                    audio=np.ascontiguousarray(audio, dtype=np.float32),
                    sample_rate=generator.sample_rate,
                    info=info,
                )
            )
        return candidates


@runtime_checkable
class Searchable(Protocol):
    """A generator that is not a local codec LM but offers one's prefix backend (e.g. a wrapper
    around one); a generator without it cannot be searched."""

    def search_backend(self) -> PrefixBackend: ...


def prefix_backend(generator: Any) -> PrefixBackend | None:
    """The search backend of a generator, or None when it cannot continue token prefixes."""
    if isinstance(generator, CodecLMGenerator):
        return PrefixBackend(generator)
    return generator.search_backend() if isinstance(generator, Searchable) else None
