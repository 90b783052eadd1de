"""One codec-LM generator for every LLM that speaks in codec tokens (Orpheus, Llasa, Spark-TTS).

A codec LM is a plain causal LM whose output ids are audio-codec codes; the models differ only in
their *layout* (how a prompt is built, which ids are codes, which id stops, how many tokens make
a second) and their codec. This module holds what they share: the options table, the generator
that turns every candidate into its own seeded vLLM request and keeps a bounded window of them in
flight (continuous batching and the prefix cache share the work), constrained decoding to the
layout's grammar (:mod:`verified_tts.generators.codec_lm_logits`), decoding finished requests on a
thread pool while the engine keeps generating, and counting what the codec could not use (dropped
frames: a quality signal). A layout module (``orpheus``, ``llasa``, ``spark``) supplies a
:class:`Layout` and a ``load(config)``; the engine lives in :mod:`.codec_lm_engine`.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from verified_tts.errors import MissingExtra, UserError
from verified_tts.generators.base import Candidate, SynthesisRequest
from verified_tts.options.generation import CodecLMOptions

__all__ = [
    "CodecLMGenerator",
    "CodecLMOptions",
    "Layout",
    "Parsed",
    "load_tokenizer",
    "read_clip",
    "request_window",
    "token_budget",
]


def request_window(options: CodecLMOptions) -> int:
    """Requests in flight: ``in_flight``, or 64 on a GPU and 8 on CPU (where more only queue)."""
    if options.in_flight is not None:
        return int(options.in_flight)
    import torch

    return 64 if torch.cuda.is_available() else 8


def token_budget(text: str, options: CodecLMOptions, tokens_per_second: float) -> int:
    """Token budget for speaking ``text``: whole frames, within the configured bounds."""
    step = options.FRAME_TOKENS
    seconds = len(text) * options.seconds_per_char + options.slack_s
    frames = math.ceil(seconds * tokens_per_second / step)
    lo = math.ceil(options.max_tokens_min / step)
    hi = max(lo, options.max_tokens_max // step)
    # A budget of whole frames: a request cut off by max_tokens still ends on a frame boundary.
    return step * min(max(frames, lo), hi)


@dataclass(frozen=True, eq=False)
class Parsed:
    """A finished request's output as the codec will take it."""

    codes: Any  # the codec's input (layout-specific)
    frames: int  # codec frames kept
    dropped: int  # frames (or tokens) the codec could not use
    stopped: bool  # ended with a stop id, not by the token budget
    trim_samples: int = 0  # samples to cut from the decoded audio's start (a prompt's audio)


class Layout(Protocol):
    """What one codec LM's token layout supplies to the shared generator."""

    name: str
    sample_rate: int
    samples_per_frame: int
    tokens_per_second: float

    def prompt_ids(self, request: SynthesisRequest) -> list[int]: ...

    def grammar(self, request: SynthesisRequest) -> dict[str, Any]: ...

    def stop_ids(self) -> list[int]: ...

    def parse(self, token_ids: Sequence[int], request: SynthesisRequest) -> Parsed: ...

    def identity(self) -> dict[str, Any]: ...

    def info(self, request: SynthesisRequest) -> dict[str, Any]: ...


@dataclass
class _Stats:
    """Running totals since load, for benchmarks and the run summary."""

    requests: int = 0
    tokens: int = 0
    frames: int = 0
    dropped_frames: int = 0
    audio_s: float = 0.0
    wall_s: float = 0.0  # inside sample()
    engine_busy_s: float = 0.0  # wall time with at least one request in the engine
    decode_s: float = 0.0  # codec decode time summed over worker threads
    prompt_tokens: int = 0  # prompt tokens of finished requests
    cached_prompt_tokens: int = 0  # of those, served by the engine's prefix cache
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


@dataclass(frozen=True)
class _Finished:
    """A request the engine has finished, waiting for parsing and decoding."""

    request: SynthesisRequest
    index: int
    token_ids: list[int]
    finish_reason: str
    budget: int
    prompt_len: int


@dataclass(frozen=True)
class Job:
    """One engine request: prompt ids and sampling params (built by the generator)."""

    prompt: list[int]
    params: Any


class CodecLMGenerator:
    """Samples candidates from one loaded engine through a layout and a codec."""

    def __init__(
        self,
        *,
        layout: Any,
        llm: Any,
        codec: Any,
        model: str,
        codec_source: str,
        options: CodecLMOptions,
    ) -> None:
        self.layout = layout
        self.name = layout.name
        self.sample_rate = int(layout.sample_rate)
        self.llm = llm
        self.codec = codec
        self.model = model
        self.codec_source = codec_source
        self.options = options
        self._stats = _Stats()
        self._ids = itertools.count()
        self._pool = ThreadPoolExecutor(
            options.decode_workers, thread_name_prefix=f"{layout.name}-decode"
        )

    # Layout state that callers and tests read through the generator.
    @property
    def tokenizer(self) -> Any:
        return self.layout.tokenizer

    @property
    def reference(self) -> Any:
        return getattr(self.layout, "reference", None)

    @property
    def voice(self) -> str | None:
        return getattr(self.layout, "voice", None)

    def identity(self) -> Mapping[str, Any]:
        o = self.options
        return {
            "generator": self.name,
            "model": self.model,
            "codec": self.codec_source,
            **self.layout.identity(),
            "sampling": o.sampling(),
            "constrained": o.constrained,
            "max_tokens": [o.seconds_per_char, o.slack_s, o.max_tokens_min, o.max_tokens_max],
            "dtype": o.dtype,
            "quantization": o.quantization,
        }

    def stats(self) -> dict[str, float]:
        """Totals since load, plus the share of sample() wall time the engine had no work."""
        s = self._stats
        with s.lock:
            out: dict[str, float] = {
                "requests": s.requests,
                "tokens": s.tokens,
                "frames": s.frames,
                "dropped_frames": s.dropped_frames,
                "audio_s": s.audio_s,
                "wall_s": s.wall_s,
                "engine_busy_s": s.engine_busy_s,
                "decode_s": s.decode_s,
                "prompt_tokens": s.prompt_tokens,
                "cached_prompt_tokens": s.cached_prompt_tokens,
            }
        out["engine_idle_share"] = 1.0 - out["engine_busy_s"] / out["wall_s"] if s.wall_s else 0.0
        return out

    def prompt_ids(self, request: SynthesisRequest) -> list[int]:
        return self.layout.prompt_ids(request)

    def max_model_len(self) -> int:
        return int(self.llm.llm_engine.model_config.max_model_len)

    def sampling_params(
        self,
        request: SynthesisRequest,
        prompt_len: int = 0,
        *,
        budget: int | None = None,
        grammar: dict[str, Any] | None = None,
        stop: Sequence[int] | None = None,
    ) -> Any:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        from verified_tts.generators.codec_lm_logits import EXTRA_ARG

        o = self.options
        step = o.FRAME_TOKENS
        if budget is None:
            budget = token_budget(request.text, o, self.layout.tokens_per_second)
        room = self.max_model_len() - prompt_len
        if room < step:
            raise UserError(
                f"utterance {request.utterance_key}: the prompt ({prompt_len} tokens) fills the "
                f"engine's max_model_len ({self.max_model_len()}); raise max_model_len in "
                f"[{o.TABLE}] or use a shorter voice reference"
            )
        budget = min(budget, step * (room // step))
        extra = {"top_k": o.top_k} if o.top_k and o.top_k > 0 else {}
        if o.constrained or grammar is not None:  # an explicit grammar is a structural need
            extra["extra_args"] = {EXTRA_ARG: grammar or self.layout.grammar(request)}
        return SamplingParams(
            n=1,
            temperature=o.temperature,
            top_p=o.top_p,
            **extra,
            repetition_penalty=o.repetition_penalty,
            max_tokens=budget,
            # vLLM seeds are 64-bit signed; the store's seeds may use all 64 bits.
            seed=int(request.seed) % (1 << 63),
            stop_token_ids=list(stop if stop is not None else self.layout.stop_ids()),
            detokenize=False,
            output_kind=RequestOutputKind.FINAL_ONLY,  # one message per request, not per token
        )

    def _enqueue(self, ids: list[int], params: Any) -> str:
        """Add one request to the engine without running it; returns the id outputs carry."""
        rid = f"vtts-{next(self._ids)}"
        # LLMEngine.add_request keeps our id as the outputs' request_id (LLM.enqueue would
        # return vLLM's internal, randomised id instead, which outputs do not carry).
        self.llm.llm_engine.add_request(rid, {"prompt_token_ids": ids}, params)
        return rid

    def drive(
        self,
        jobs: Sequence[Job],
        on_finished: Callable[[list[tuple[int, Any]]], None],
        cached: dict[int, int] | None = None,
    ) -> tuple[float | None, float]:
        """Run ``jobs`` through the engine in the bounded window.

        ``on_finished`` gets (job index, completion) pairs as requests finish, while the engine
        keeps stepping. ``cached``, when given, receives each job's prompt tokens that the
        engine's prefix cache served. Returns (first request added, last finished) times.
        """
        engine = self.llm.llm_engine
        pending = deque(enumerate(jobs))
        in_flight: dict[str, int] = {}
        first_added: float | None = None
        last_finished = time.perf_counter()
        window = request_window(self.options)
        try:
            while pending or in_flight:
                while pending and len(in_flight) < window:
                    i, job = pending.popleft()
                    in_flight[self._enqueue(job.prompt, job.params)] = i
                    if first_added is None:
                        first_added = time.perf_counter()
                if not engine.has_unfinished_requests():
                    raise RuntimeError(f"vLLM dropped requests {sorted(in_flight)[:3]}")
                done: list[tuple[int, Any]] = []
                for out in engine.step():
                    if out.finished and out.request_id in in_flight:
                        index = in_flight.pop(out.request_id)
                        done.append((index, out.outputs[0]))
                        last_finished = time.perf_counter()
                        hits = int(out.num_cached_tokens or 0)
                        with self._stats.lock:
                            self._stats.prompt_tokens += len(jobs[index].prompt)
                            self._stats.cached_prompt_tokens += hits
                        if cached is not None:
                            cached[index] = hits
                if done:
                    on_finished(done)
        except BaseException:
            if in_flight:  # leave the shared engine clean for the next call
                engine.abort_request(list(in_flight))
            raise
        return first_added, last_finished

    def sample(self, requests: Sequence[SynthesisRequest]) -> list[Candidate]:
        """All requests through the engine in a bounded window; audio decoded as each finishes."""
        if not requests:
            return []
        start = time.perf_counter()
        jobs = []
        for request in requests:
            ids = self.prompt_ids(request)
            jobs.append(Job(ids, self.sampling_params(request, len(ids))))
        futures: list[tuple[Future[list[Candidate]], list[int]]] = []

        def finished(done: list[tuple[int, Any]]) -> None:
            items = [
                _Finished(
                    requests[i],
                    i,
                    list(c.token_ids),
                    str(c.finish_reason),
                    jobs[i].params.max_tokens,
                    len(jobs[i].prompt),
                )
                for i, c in done
            ]
            # Decoding runs on the pool while the engine keeps stepping. On a GPU the requests
            # that finished together are decoded as one batch.
            groups = [items] if self.codec.max_batch > 1 else [[d] for d in items]
            for group in groups:
                futures.append((self._pool.submit(self._finish, group), [d.index for d in group]))

        # The engine works in its own process whenever it holds requests, so its busy time is
        # from the first request added to the last one finished; the rest of this call (prompt
        # building, waiting for the last decodes) is time the engine sits idle.
        first_added, last_finished = self.drive(jobs, finished)
        by_index: dict[int, Candidate] = {}
        for future, indices in futures:
            by_index.update(zip(indices, future.result(), strict=True))
        with self._stats.lock:
            self._stats.wall_s += time.perf_counter() - start
            self._stats.engine_busy_s += last_finished - (first_added or last_finished)
        return [by_index[i] for i in range(len(requests))]

    def _finish(self, group: Sequence[_Finished]) -> list[Candidate]:
        """Parsed codes, dropped counts and audio for requests that finished together."""
        parsed = [self.layout.parse(item.token_ids, item.request) for item in group]
        t0 = time.perf_counter()
        audios = self.codec.decode_batch(
            [(p.codes, item.request.seed) for item, p in zip(group, parsed, strict=True)]
        )
        decode_s = time.perf_counter() - t0
        candidates = []
        for item, p, audio in zip(group, parsed, audios, strict=True):
            request = item.request
            if p.trim_samples:
                audio = audio[p.trim_samples :]
            if audio.size == 0:
                # No valid frame: one frame of silence keeps every verifier's input well-formed;
                # info['frames'] == 0 and the dropped count say what happened.
                audio = np.zeros(self.layout.samples_per_frame, dtype=np.float32)
            digest = hashlib.sha256(np.asarray(item.token_ids, dtype=np.int64).tobytes())
            info = {
                "tokens": len(item.token_ids),
                "token_digest": digest.hexdigest()[:16],  # identifies the sample in reports
                "frames": p.frames,
                "dropped_frames": p.dropped,
                "finish_reason": item.finish_reason,
                "stopped": p.stopped,
                "max_tokens": item.budget,
                "prompt_tokens": item.prompt_len,
                "constrained": self.options.constrained,
                **self.layout.info(request),
                "decode_s": round(decode_s / len(group), 4),
            }
            candidates.append(
                Candidate(
                    utterance_key=request.utterance_key,
                    index=request.index,
                    seed=request.seed,
                    audio=np.ascontiguousarray(audio, dtype=np.float32),
                    sample_rate=self.sample_rate,
                    info=info,
                )
            )
        with self._stats.lock:
            s = self._stats
            s.requests += len(group)
            s.tokens += sum(len(item.token_ids) for item in group)
            s.frames += sum(p.frames for p in parsed)
            s.dropped_frames += sum(p.dropped for p in parsed)
            s.audio_s += sum(p.frames for p in parsed) * (
                self.layout.samples_per_frame / self.sample_rate
            )
            s.decode_s += decode_s
        return candidates

    def close(self) -> None:
        """Stop the decode threads (the engine stays loaded for other generators)."""
        self._pool.shutdown(wait=True)


# --- shared loading helpers ---------------------------------------------------------------------


def load_tokenizer(source: str | Path, model_label: str, *, generator: str, table: str) -> Any:
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:
        raise MissingExtra(
            f"the {generator} generator", generator.lower().replace("-tts", ""), "transformers"
        ) from exc
    try:
        return AutoTokenizer.from_pretrained(str(source))
    except (OSError, ValueError) as exc:
        raise UserError(
            f"could not load a tokenizer for {generator} model '{model_label}' from '{source}' "
            f"({type(exc).__name__}): put tokenizer.json in the model folder or set tokenizer = "
            f"'FOLDER_OR_ID' in [{table}]"
        ) from exc


def read_clip(clip: str) -> tuple[np.ndarray, int]:
    """The ``--voice-ref`` clip as mono float32 and its rate, or one clear error."""
    from verified_tts.audio import read_audio

    return read_audio(Path(clip).expanduser(), "--voice-ref")


